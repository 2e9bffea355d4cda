/**
 * `maple pull`, `maple models` and `maple rm`: the models directory by hand, as `ollama pull /
 * list / rm` and llama.cpp's `-hf` cache do it. They take the same `--models-dir` /
 * `MAPLE_MODELS_DIR` as `maple serve`, and nothing else from its settings.
 */
import { parseArgs } from "node:util";
import { ConfigError, resolveConfig } from "../config/settings.js";
import { isHuggingFaceSpec } from "../models/huggingFace.js";
import { listStoredModels, removeStoredModels, type StoredModel } from "../models/modelStore.js";
import { expandShortName, type KnownFiles } from "../models/officialModels.js";
import { ModelSpecError, resolveModel, syntheticPrefix, type ResolveWork } from "../models/resolveModel.js";
import { modelsHelp, pullHelp, rmHelp } from "./help.js";
import { createProgressReporter, type ProgressReporter } from "./progress.js";

type Output = NodeJS.WritableStream & { isTTY?: boolean; columns?: number };

/** Where a command writes, and what tests inject (a checksum table for a small file instead of 6 GB). */
export interface CommandIo {
    stdout: Output;
    stderr: Output;
    env?: NodeJS.ProcessEnv;
    knownFiles?: KnownFiles;
    /** Ctrl-C: the CLI aborts it on SIGINT. */
    signal?: AbortSignal;
}

const progressLabels: Record<ResolveWork, string> = { download: "Downloading", verify: "Checking sha256", write: "Writing synthetic model" };

/** `maple pull MODEL`: download (resumable, with progress) or write it, check it, exit. */
export async function pullCommand(args: string[], io: CommandIo): Promise<number> {
    const parsed = parseCommand("pull", args, io, {});
    if (typeof parsed === "number") return parsed;
    if (parsed.help) return printHelp(io, pullHelp());
    if (parsed.positionals.length !== 1) return usageError(io, "pull", "expects one model, e.g. 'maple pull maple-preview'");
    const [spec = ""] = parsed.positionals;
    try {
        if (!isFetchable(spec)) {
            return usageError(io, "pull", `'${spec}' is not a model to fetch: expected maple-preview[:tq1], hf:owner/repo/file.gguf, hf:owner/repo:QUANT or synthetic:NAME`);
        }
    } catch (error) {
        return failure(io, "pull", error);
    }
    const bars = new Map<ResolveWork, ProgressReporter>();
    try {
        const model = await resolveModel(spec, {
            modelsDir: parsed.modelsDir,
            signal: io.signal,
            knownFiles: io.knownFiles,
            onProgress: (work, done, total) => {
                let bar = bars.get(work);
                if (bar === undefined) {
                    bar = createProgressReporter({ label: `${progressLabels[work]} ${spec}`, stream: io.stderr });
                    bars.set(work, bar);
                }
                bar.update(done, total);
                if (total > 0 && done >= total) bar.done();
            }
        });
        for (const bar of bars.values()) bar.done();
        io.stdout.write(`${spec}: ready at ${model.path}\n`);
        return 0;
    } catch (error) {
        for (const bar of bars.values()) bar.done("stopped");
        if (io.signal?.aborted) {
            io.stderr.write(`maple pull: interrupted; what was downloaded is kept, run 'maple pull ${spec}' again to resume\n`);
            return 130;
        }
        return failure(io, "pull", error);
    }
}

/** `maple models`: what the models directory holds. */
export async function modelsCommand(args: string[], io: CommandIo): Promise<number> {
    const parsed = parseCommand("models", args, io, { json: { type: "boolean" } });
    if (typeof parsed === "number") return parsed;
    if (parsed.help) return printHelp(io, modelsHelp());
    if (parsed.positionals.length > 0) return usageError(io, "models", "takes no arguments");
    const models = await listStoredModels(parsed.modelsDir, io.knownFiles);
    if (parsed.values.json === true) {
        io.stdout.write(JSON.stringify({ models_dir: parsed.modelsDir, models: models.map(({ path: _path, ...model }) => model) }, null, 2) + "\n");
        return 0;
    }
    if (models.length === 0) {
        io.stdout.write(`No models in ${parsed.modelsDir}. Fetch one with 'maple pull maple-preview'.\n`);
        return 0;
    }
    const rows = [["MODEL", "SIZE", "KIND", "STATUS", "FILE"], ...models.map((model) => [
        displayName(model), `${(model.bytes / 1e9).toFixed(2)} GB`, model.kind, model.status, model.file
    ])];
    const widths = rows[0]!.map((_, column) => Math.max(...rows.map((row) => row[column]!.length)));
    io.stdout.write(`Models in ${parsed.modelsDir}:\n`);
    for (const row of rows) io.stdout.write(row.map((cell, column) => (column === row.length - 1 ? cell : cell.padEnd(widths[column]!))).join("   ") + "\n");
    return 0;
}

/** `maple rm MODEL...`: deletes files from the models directory. */
export async function rmCommand(args: string[], io: CommandIo): Promise<number> {
    const parsed = parseCommand("rm", args, io, {});
    if (typeof parsed === "number") return parsed;
    if (parsed.help) return printHelp(io, rmHelp());
    if (parsed.positionals.length === 0) return usageError(io, "rm", "expects at least one model, e.g. 'maple rm maple-preview:tq1'");
    let code = 0;
    for (const target of parsed.positionals) {
        let removed: StoredModel[];
        try {
            removed = await removeStoredModels(parsed.modelsDir, target, io.knownFiles);
        } catch (error) {
            code = failure(io, "rm", error);
            continue;
        }
        if (removed.length === 0) {
            io.stderr.write(`maple rm: '${target}' is not in ${parsed.modelsDir} (see 'maple models')\n`);
            code = 1;
        }
        for (const model of removed) io.stdout.write(`deleted ${displayName(model)} (${model.file}, ${(model.bytes / 1e9).toFixed(2)} GB)\n`);
    }
    return code;
}

interface ParsedCommand {
    help: boolean;
    modelsDir: string;
    positionals: string[];
    values: Record<string, unknown>;
}

/** Flags common to the three commands, plus `extra`; a number is the exit code of a usage error. */
function parseCommand(command: string, args: string[], io: CommandIo, extra: Record<string, { type: "boolean" }>): ParsedCommand | number {
    let values: Record<string, unknown>;
    let positionals: string[];
    try {
        ({ values, positionals } = parseArgs({
            args,
            options: { "models-dir": { type: "string" }, help: { type: "boolean", short: "h" }, ...extra },
            strict: true,
            allowPositionals: true
        }));
    } catch (error) {
        return usageError(io, command, (error as Error).message);
    }
    try {
        const { modelsDir } = resolveConfig({ "models-dir": values["models-dir"] as string | undefined }, io.env ?? process.env, ["modelsDir"]);
        return { help: values.help === true, modelsDir, positionals, values };
    } catch (error) {
        if (error instanceof ConfigError) return usageError(io, command, error.message);
        throw error;
    }
}

/** Only what is fetched or written into the models directory: a local path is already where it is. */
function isFetchable(spec: string): boolean {
    return isHuggingFaceSpec(spec) || spec.startsWith(syntheticPrefix) || expandShortName(spec) !== undefined;
}

function displayName(model: StoredModel): string {
    return model.shortName ?? model.spec ?? "(unknown download)";
}

function printHelp(io: CommandIo, text: string): number {
    io.stdout.write(`${text}\n`);
    return 0;
}

function usageError(io: CommandIo, command: string, message: string): number {
    io.stderr.write(`maple ${command}: ${message.replace(/\.$/, "")}. Run 'maple ${command} --help'.\n`);
    return 2;
}

/** A refused or failed model: one line, exit 1; anything unexpected goes up to main, which reports it (one line, the stack at MAPLE_LOG_LEVEL=debug). */
function failure(io: CommandIo, command: string, error: unknown): number {
    if (error instanceof ModelSpecError) {
        io.stderr.write(`maple ${command}: ${error.message}\n`);
        return 1;
    }
    throw error;
}

import { ConfigError, resolveConfig } from "../config/settings.js";
import { ModelSpecError } from "../models/resolveModel.js";
import { createLogger } from "../server/logger.js";
import { ListenError, startServer, version, type LoadStage, type RunningServer } from "../server/startServer.js";
import { mainHelp, serveHelp } from "./help.js";
import { modelsCommand, pullCommand, rmCommand, type CommandIo } from "./modelCommands.js";
import { createProgressReporter } from "./progress.js";
import { parseServeFlags, type ServeFlags } from "./serveFlags.js";

const labels: Record<LoadStage, string> = { download: "Downloading model", verify: "Checking sha256", write: "Writing synthetic model", load: "Loading model" };

/**
 * The `maple` command. Returns the exit code for errors before the server runs; an error no
 * check foresaw is one line too, as the foreseen ones are (unexpectedError).
 */
export async function main(argv: string[]): Promise<number> {
    try {
        return await run(argv);
    } catch (error) {
        // Only MAPLE_LOG_LEVEL here: serve reports what fails once its --log-level is known itself.
        return unexpectedError(argv[0] ?? "", "failed", error, { logLevel: process.env.MAPLE_LOG_LEVEL, setting: "MAPLE_LOG_LEVEL=debug" });
    }
}

async function run(argv: string[]): Promise<number> {
    const [command, ...rest] = argv;
    if (command === undefined || command === "--help" || command === "-h" || command === "help") {
        console.error(mainHelp(version));
        return command === undefined ? 2 : 0;
    }
    if (command === "--version" || command === "-v") {
        process.stdout.write(`${version}\n`);
        return 0;
    }
    if (command === "serve") return serve(rest);
    const modelCommand = modelCommands.get(command);
    if (modelCommand === undefined) {
        console.error(`maple: unknown command '${command}'. Run 'maple --help'.`);
        return 2;
    }
    const interrupt = new AbortController();
    const onInterrupt = (): void => interrupt.abort(new Error("interrupted"));
    process.once("SIGINT", onInterrupt);
    try {
        return await modelCommand(rest, { stdout: process.stdout, stderr: process.stderr, signal: interrupt.signal });
    } finally {
        process.off("SIGINT", onInterrupt);
    }
}

const modelCommands = new Map<string, (args: string[], io: CommandIo) => Promise<number>>([
    ["pull", pullCommand],
    ["models", modelsCommand],
    // Ollama's names for the same listing
    ["ls", modelsCommand],
    ["list", modelsCommand],
    ["rm", rmCommand]
]);

async function serve(args: string[]): Promise<number> {
    let parsed: ServeFlags;
    try {
        parsed = parseServeFlags(args);
    } catch (error) {
        console.error(`maple serve: ${(error as Error).message}. Run 'maple serve --help'.`);
        return 2;
    }
    if (parsed.help) {
        process.stdout.write(`${serveHelp()}\n`);
        return 0;
    }
    let config;
    try {
        config = resolveConfig(parsed.flags);
    } catch (error) {
        if (error instanceof ConfigError) {
            console.error(`maple serve: ${error.message}`);
            return 2;
        }
        throw error;
    }

    const logger = createLogger(config.logLevel);
    const bars = new Map<LoadStage, ReturnType<typeof createProgressReporter>>();
    let server: RunningServer;
    try {
        server = await startServer(config, {
            logger,
            onProgress: (stage, done, total) => {
                let bar = bars.get(stage);
                if (bar === undefined) {
                    // Piped or collected output gets the progress as log lines, in the log's format and level.
                    bar = createProgressReporter({ label: labels[stage], showBytes: stage !== "load", logger: { info: (line) => logger.info({ stage }, line) } });
                    bars.set(stage, bar);
                }
                bar.update(done, total);
                if (total > 0 && done >= total) bar.done();
            }
        });
    } catch (error) {
        if (error instanceof ListenError) {
            console.error(`maple serve: ${error.message}`);
            return 1;
        }
        return unexpectedError("serve", "could not start", error, { logLevel: config.logLevel, setting: "--log-level debug" });
    }

    let stopping = false;
    const stop = async (signal: NodeJS.Signals): Promise<void> => {
        if (stopping) {
            // A second signal (Ctrl-C after a SIGTERM) cuts the drain short.
            void server.close();
            return;
        }
        stopping = true;
        // SIGTERM is an orchestrator's or a balancer's stop: drain first. SIGINT is a person at a terminal.
        const drainSeconds = signal === "SIGTERM" ? config.drainSeconds : 0;
        logger.info({ signal, drainSeconds, graceSeconds: config.shutdownGraceSeconds },
            drainSeconds > 0 ? "shutting down: /health answers 503, still serving while balancers notice" : "shutting down: finishing in-flight requests");
        // Past the grace period close() cancels what still runs, with an error event to each client;
        // the hard deadline only guards against a close that never returns.
        const hardDeadline = setTimeout(() => {
            logger.error("shutdown did not complete; exiting");
            process.exit(1);
        }, (drainSeconds + config.shutdownGraceSeconds) * 1000 + 10_000);
        hardDeadline.unref();
        await server.close({ graceMs: config.shutdownGraceSeconds * 1000, drainMs: drainSeconds * 1000 });
        logger.info("stopped");
        process.exit(0);
    };
    process.once("SIGTERM", (signal) => void stop(signal));
    process.once("SIGINT", (signal) => void stop(signal));

    try {
        await server.ready;
        for (const bar of bars.values()) bar.done();
    } catch (error) {
        for (const bar of bars.values()) bar.done();
        const message = error instanceof ModelSpecError
            ? error.message
            : `the model ${config.model ?? "(default)"} failed to load: ${(error as Error).message}`;
        console.error(`maple serve: ${message}`);
        await server.close();
        return 1;
    }
    return 0;
}

/**
 * An error no check foresaw (a bug, or a failure nobody gave a message yet, such as a --host that
 * does not resolve), reported as the foreseen ones are: one line naming the command, what failed
 * and Node's message, exit 1. The stack trace is for a bug report: printed after that line at log
 * level debug or trace, not otherwise; `debug.setting` is how to ask for it (only serve has --log-level).
 */
function unexpectedError(command: string, what: string, error: unknown, debug: { logLevel: string | undefined; setting: string }): number {
    const showStack = debug.logLevel === "debug" || debug.logLevel === "trace";
    const stack = error instanceof Error ? error.stack : undefined;
    console.error(`maple ${command}: ${what}: ${oneLine(error)} `
        + `(unexpected; ${showStack ? "its stack trace follows" : `run again with ${debug.setting} for the stack trace to report`})`);
    if (showStack && stack !== undefined) console.error(stack);
    return 1;
}

/** An error's message on one line (its name when it has none). */
function oneLine(error: unknown): string {
    const message = error instanceof Error ? error.message : String(error);
    return message.trim().replace(/\s*\n\s*/g, " ") || (error instanceof Error ? error.name : "unknown error");
}

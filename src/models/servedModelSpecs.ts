import { basename } from "node:path";
import { ModelSpecError } from "./modelSpecError.js";

/** One model to serve: the name requests use for it, and the spec that loads it (undefined: the default model). */
export interface ServedModelSpec {
    id: string;
    spec: string | undefined;
}

/** `alias=spec`: an alias is a plain name (no `/`, `=` or spaces), so a path or an hf: reference is never read as one. */
const aliasPattern = /^([A-Za-z0-9][A-Za-z0-9._:-]*)=(.*)$/;

/**
 * The models a server serves, in order (the first is the default): `--model` given several times
 * and MAPLE_MODELS, each a spec with an optional alias, `embed=hf:org/repo/file.gguf`. Without an
 * alias the first model is named `defaultId` (MAPLE_MODEL_ID, as with one model) and the others by
 * their spec: `synthetic:qwen3-tiny` → `qwen3-tiny`, a file or hf: reference → its file name
 * without `.gguf`, a short name (`maple-preview:tq1`) → itself. No spec at all: the default model.
 */
export function servedModelSpecs(specs: readonly string[], defaultId: string): ServedModelSpec[] {
    if (specs.length === 0) return [{ id: defaultId, spec: undefined }];
    const served = specs.map((raw, index): ServedModelSpec => {
        const text = raw.trim();
        const aliased = aliasPattern.exec(text);
        if (aliased !== null) return { id: aliased[1] ?? "", spec: aliased[2]?.trim() ?? "" };
        return { id: index === 0 ? defaultId : modelNameOf(text), spec: text };
    });
    const seen = new Set<string>();
    for (const { id, spec } of served) {
        if (spec === "") throw new ModelSpecError(`The model '${id}' has an empty spec: write NAME=SPEC, e.g. embed=synthetic:qwen3-embedding-tiny`);
        if (seen.has(id)) throw new ModelSpecError(`Two served models are named '${id}': give one an alias (NAME=SPEC)`);
        seen.add(id);
    }
    return served;
}

/** The name a model is served under when no alias is given (see servedModelSpecs). */
export function modelNameOf(spec: string): string {
    if (spec.startsWith("synthetic:")) return spec.slice("synthetic:".length);
    if (spec.startsWith("hf:") || spec.includes("/") || spec.endsWith(".gguf")) return basename(spec).replace(/\.gguf$/i, "");
    return spec;
}

/** Splits a comma list of specs (MAPLE_MODELS, repeated --model flags joined), dropping empty items. */
export function splitModelSpecs(list: string | undefined): string[] {
    return (list ?? "").split(",").map((spec) => spec.trim()).filter((spec) => spec !== "");
}

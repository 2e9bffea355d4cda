/**
 * deepgrove's official maple-preview files, by short name, and what Maple knows about their
 * bytes. Short names follow Ollama's `name:tag` habit: the bare name is the default tag.
 */
import { ModelSpecError } from "./modelSpecError.js";

export interface OfficialModel {
    /** `maple-preview` */
    readonly name: string;
    /** `tq2` (the default) or `tq1` */
    readonly tag: string;
    readonly spec: string;
    readonly description: string;
}

/** What a file must be to be trusted: its size, and its sha256 where it is known. */
export interface KnownFile {
    readonly bytes: number;
    /** lowercase hex; when absent only the size is checked */
    readonly sha256?: string;
}

/** Known files by hf: spec. Injectable (tests check a small file with a known hash instead of 6 GB). */
export type KnownFiles = Readonly<Record<string, KnownFile>>;

const repository = "hf:deepgrove/maple-preview-GGUF";

export const officialModels: readonly OfficialModel[] = [
    {
        name: "maple-preview",
        tag: "tq2",
        spec: `${repository}/maple-preview-TQ2_0-head-Q4_K.gguf`,
        description: "ternary TQ2_0 weights, Q4_K output head: 5.9 GB, the fast CPU kernels (the default)"
    },
    {
        name: "maple-preview",
        tag: "tq1",
        spec: `${repository}/maple-preview-TQ1_0-head-Q4_K.gguf`,
        description: "ternary TQ1_0 weights, Q4_K output head: 5.0 GB, smaller, slower kernels"
    }
];

/** The model Maple serves when none is given: maple-preview's TQ2_0 file. */
export const defaultModelSpec = officialModels[0]!.spec;

/**
 * Sizes and hashes of the official files, from the repository's public listing. The TQ1_0 file's
 * sha256 was not published with it, so only its size is checked.
 */
export const officialFiles: KnownFiles = {
    [officialModels[0]!.spec]: { bytes: 5_901_782_560, sha256: "221f792cc9760d27a34f449b4229e258fa968a63bd4213993e45d9c0bb477a9e" },
    [officialModels[1]!.spec]: { bytes: 4_984_016_416 }
};

/**
 * The hf: spec a short name stands for (`maple-preview`, `maple-preview:tq2`, `maple-preview:tq1`),
 * or undefined when `spec` is no short name. A known name with an unknown tag is a ModelSpecError
 * listing the tags.
 */
export function expandShortName(spec: string): string | undefined {
    const [name, tag, ...rest] = spec.split(":");
    const tags = officialModels.filter((model) => model.name === name);
    if (tags.length === 0 || rest.length > 0) return undefined;
    if (tag === undefined) return tags[0]!.spec;
    const model = tags.find((candidate) => candidate.tag === tag.toLowerCase());
    if (model === undefined) {
        throw new ModelSpecError(`Unknown tag "${tag}" for ${name}; known: ${tags.map((candidate) => `${name}:${candidate.tag}`).join(", ")}`);
    }
    return model.spec;
}

/** `maple-preview:tq2` for an official hf: spec, else undefined. */
export function shortNameOf(spec: string): string | undefined {
    const model = officialModels.find((candidate) => candidate.spec === spec);
    return model && `${model.name}:${model.tag}`;
}

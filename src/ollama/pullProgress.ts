import type { ResolveWork } from "../models/resolveModel.js";

/** One object of an /api/pull stream (api.ProgressResponse). */
export interface OllamaProgress {
    status: string;
    digest?: string;
    total?: number;
    completed?: number;
}

const statusOf: Record<ResolveWork, (spec: string) => string> = {
    download: (spec) => `pulling ${spec}`,
    verify: () => "verifying sha256 digest",
    write: (spec) => `writing ${spec}`
};

/**
 * Maple's download progress (`resolveModel`'s onProgress) → Ollama's progress objects: `pulling
 * manifest` first, then per stage `{status, digest, total, completed}` (the `ollama` CLI draws a
 * bar per digest; Maple's is the model spec, not a layer's sha256), at most one per percent so a
 * multi-gigabyte download is not a million lines, and `success` last.
 */
export class PullProgress {
    private readonly lastPercent = new Map<ResolveWork, number>();

    constructor(private readonly spec: string) {}

    start(): OllamaProgress[] {
        return [{ status: "pulling manifest" }];
    }

    update(work: ResolveWork, done: number, total: number): OllamaProgress[] {
        const percent = total > 0 ? Math.floor((done / total) * 100) : -1;
        if (this.lastPercent.get(work) === percent && done < total) return [];
        this.lastPercent.set(work, percent);
        return [{ status: statusOf[work](this.spec), digest: this.spec, ...(total > 0 ? { total } : {}), completed: done }];
    }

    finish(): OllamaProgress[] {
        return [{ status: "success" }];
    }
}

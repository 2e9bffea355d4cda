import { ModelLoadingError, ServerError } from "../errors.js";
import type { ServingModel } from "./index.js";

/** A loaded model as the generation core serves it (its chat template: --chat-template, else the GGUF's own, else ChatML), and where it came from. */
export interface ReadyModel extends ServingModel {
    /** What was asked for, as /health reports it in `model_path`. */
    source: string;
    /** OpenAI's `system_fingerprint` of this version, model file and engine build (see server/systemFingerprint.ts). */
    systemFingerprint: string;
}

export type ModelState =
    | { status: "loading"; stage: "resolving" | "downloading" | "verifying" | "writing" | "loading"; progress: number | undefined }
    | ({ status: "ready" } & ReadyModel)
    | { status: "failed"; error: Error };

/**
 * Holds the served model through its life: loading in the background while the server already
 * answers, then ready, or failed. Routes ask it for the engine and get a 503 model_loading until then.
 */
export class ModelHost {
    private current: ModelState = { status: "loading", stage: "resolving", progress: undefined };
    private drainingSince: number | undefined;

    get state(): ModelState {
        return this.current;
    }

    setLoading(stage: Extract<ModelState, { status: "loading" }>["stage"], progress?: number): void {
        if (this.current.status === "loading") this.current = { status: "loading", stage, progress };
    }

    setReady(model: ReadyModel): void {
        this.current = { status: "ready", ...model };
    }

    setFailed(error: Error): void {
        this.current = { status: "failed", error };
    }

    /**
     * The server is shutting down: /health answers 503 from now on so balancers stop sending,
     * while requests that still arrive are served as before.
     */
    startDraining(): void {
        this.drainingSince ??= Date.now();
    }

    /** Since when (epoch ms) the server has been draining, or undefined. */
    get draining(): number | undefined {
        return this.drainingSince;
    }

    /** The engine and scheduler, or the 503 (loading) / 500 (failed) a route answers instead. */
    requireReady(): ReadyModel {
        const state = this.current;
        if (state.status === "ready") return state;
        if (state.status === "loading") throw new ModelLoadingError();
        throw new ServerError("The model failed to load; see the server log.");
    }
}

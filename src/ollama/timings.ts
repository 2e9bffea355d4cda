import type { GenerationOptions } from "../core/index.js";

/** The durations of Ollama's final object (api.Metrics), in nanoseconds as Ollama reports them. */
export interface OllamaDurations {
    total_duration: number;
    load_duration: number;
    prompt_eval_duration: number;
    eval_duration: number;
}

const nanoseconds = (ms: number): number => Math.max(0, Math.round(ms * 1e6));

/**
 * Times one request as Ollama splits it. `load_duration` is the time before generation could
 * start (the model is loaded already: here it is the prompt's rendering, tokenizing and the wait
 * for a slot), `prompt_eval_duration` from then to the first generated token, `eval_duration` from
 * the first token to the end, `total_duration` the whole request.
 */
export class RequestTimings {
    private readonly receivedAt: number;
    private startedAt: number | undefined;
    private firstTokenAt: number | undefined;

    constructor(private readonly now: () => number = () => performance.now()) {
        this.receivedAt = now();
    }

    /** The generation holds its slot: prompt evaluation is next. */
    started(): void {
        this.startedAt = this.now();
    }

    firstToken(): void {
        this.firstTokenAt ??= this.now();
    }

    /** Wraps the route's observer so the first token is timed too (the metrics still see every call). */
    observe(options: GenerationOptions): GenerationOptions {
        const inner = options.observe;
        return {
            ...options,
            observe: () => {
                const observer = inner?.();
                return {
                    onFirstToken: () => {
                        this.firstToken();
                        observer?.onFirstToken();
                    },
                    onToken: () => observer?.onToken(),
                    onEnd: (counts, completed) => observer?.onEnd(counts, completed)
                };
            }
        };
    }

    durations(): OllamaDurations {
        const end = this.now();
        const started = this.startedAt ?? end;
        const firstToken = this.firstTokenAt ?? end;
        return {
            total_duration: nanoseconds(end - this.receivedAt),
            load_duration: nanoseconds(started - this.receivedAt),
            prompt_eval_duration: nanoseconds(firstToken - started),
            eval_duration: nanoseconds(end - firstToken)
        };
    }
}

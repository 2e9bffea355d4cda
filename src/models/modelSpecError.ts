/** Thrown for a model that cannot be found, fetched or trusted; the CLI prints it as one line and exits 1. */
export class ModelSpecError extends Error {
    constructor(message: string, options?: { cause?: unknown }) {
        super(message, options);
        this.name = "ModelSpecError";
    }
}

/**
 * The model hub could not be reached at all (DNS or connection failure, timeout): the one case in
 * which Maple serves its offline fallback instead of the default model. A hub that answers, even
 * with an error, is reachable.
 */
export class HubUnreachableError extends ModelSpecError {
    constructor(message: string, options?: { cause?: unknown }) {
        super(message, options);
        this.name = "HubUnreachableError";
    }
}

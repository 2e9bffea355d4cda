import assert from "node:assert/strict";
import { InvalidRequestError } from "../../src/errors.js";

/** The 400 that `run` throws, as its message and param; fails the test when it throws none. */
export function refusal(run: () => unknown): { message: string; param: string | null } {
    try {
        run();
    } catch (error) {
        assert.ok(error instanceof InvalidRequestError, String(error));
        return { message: error.message, param: error.param };
    }
    return assert.fail("expected a 400");
}

import { createHash } from "node:crypto";
import type { Engine } from "../engine/types.js";
import { modelFileIdentity } from "../models/modelFileIdentity.js";

/**
 * OpenAI's `system_fingerprint` ("fp_" and 10 hex digits): a hash of what decides the tokens a
 * request gets besides the request itself: Maple's version, the model file (its content, not its
 * path, so replicas of one file agree) and the engine build. Computed once when the model has
 * loaded; a client that sees it change knows the same request may now answer differently.
 */
export async function systemFingerprint(mapleVersion: string, modelPath: string, engine: Pick<Engine, "runtime">): Promise<string> {
    const parts = [`maple ${mapleVersion}`, `model ${await modelFileIdentity(modelPath)}`, `engine ${engine.runtime.engineBuild}`];
    return `fp_${createHash("sha256").update(parts.join("\n")).digest("hex").slice(0, 10)}`;
}

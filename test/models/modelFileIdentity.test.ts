import assert from "node:assert/strict";
import { randomBytes } from "node:crypto";
import { copyFile, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { after, before, describe, it } from "node:test";
import { modelFileIdentity } from "../../src/models/modelFileIdentity.js";

describe("modelFileIdentity", () => {
    let dir: string;
    let original: Buffer;
    before(async () => {
        dir = await mkdtemp(join(tmpdir(), "maple-identity-"));
        original = randomBytes(3 * 1024 * 1024 + 123);
        await writeFile(join(dir, "model.gguf"), original);
    });
    after(async () => rm(dir, { recursive: true, force: true }));

    it("is the same for a copy elsewhere (replicas, another cache)", async () => {
        await copyFile(join(dir, "model.gguf"), join(dir, "copy.gguf"));
        assert.equal(await modelFileIdentity(join(dir, "copy.gguf")), await modelFileIdentity(join(dir, "model.gguf")));
    });

    it("differs when the header, the last byte or the size differs", async () => {
        const identity = await modelFileIdentity(join(dir, "model.gguf"));
        const variants: [string, Buffer][] = [
            ["header", Buffer.concat([Buffer.from([original[0]! ^ 1]), original.subarray(1)])],
            ["last byte", Buffer.concat([original.subarray(0, -1), Buffer.from([original.at(-1)! ^ 1])])],
            ["size", original.subarray(0, -1)]
        ];
        for (const [what, bytes] of variants) {
            await writeFile(join(dir, "variant.gguf"), bytes);
            assert.notEqual(await modelFileIdentity(join(dir, "variant.gguf")), identity, what);
        }
    });

    it("reads a file smaller than one block", async () => {
        await writeFile(join(dir, "small.gguf"), "GGUF");
        assert.match(await modelFileIdentity(join(dir, "small.gguf")), /^[0-9a-f]{64}$/);
    });
});

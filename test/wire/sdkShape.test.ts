import assert from "node:assert/strict";
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, it } from "node:test";
import { fileURLToPath } from "node:url";

/** The compiled server: this file runs from dist/test/wire/. */
const compiledSource = fileURLToPath(new URL("../../src/", import.meta.url));

function compiledFiles(dir: string): string[] {
    return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
        const path = join(dir, entry.name);
        if (entry.isDirectory()) return compiledFiles(path);
        return entry.name.endsWith(".js") ? [path] : [];
    });
}

describe("wire types from the SDKs", () => {
    it("are erased at build: no compiled server file imports openai or @anthropic-ai/sdk (dev dependencies)", () => {
        const files = compiledFiles(compiledSource);
        assert.ok(files.length > 50, `found the compiled server (${files.length} files)`);
        const importing = files.filter((file) => /(?:from\s*|import\s*\(\s*|require\s*\(\s*)["'](?:openai|@anthropic-ai\/sdk)(?:["'/])/.test(readFileSync(file, "utf8")));
        assert.deepEqual(importing, []);
    });
});

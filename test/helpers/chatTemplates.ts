import { readFileSync } from "node:fs";

/** A real model's chat template, as llama.cpp ships it (test/fixtures/chatTemplates/README.md). */
export function realTemplate(file: string): string {
    return readFileSync(new URL(`../../../test/fixtures/chatTemplates/${file}`, import.meta.url), "utf8");
}

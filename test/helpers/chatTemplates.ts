import { readFileSync } from "node:fs";

/** A real model's chat template, as llama.cpp ships it (templates/README.md). */
export function realTemplate(file: string): string {
    return readFileSync(new URL(`../../../templates/${file}`, import.meta.url), "utf8");
}

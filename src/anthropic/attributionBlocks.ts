/**
 * Claude Code's attribution block: every request's first system block is
 * `x-anthropic-billing-header: cc_version=2.1.332.<3 hex>; cc_entrypoint=sdk-cli;`, where the three
 * hex digits are a short hash of the session's first user message. It is billing metadata for
 * Anthropic's API, not an instruction to the model, and as the very first text of the prompt it
 * would make every session's prompt differ from its first token on: no session could reuse
 * another's cached preamble (measured: a second session's first request, 11,653 prompt tokens,
 * 0 cached). So it is left out of the rendered prompt unless MAPLE_KEEP_BILLING_HEADER is set.
 */
export const attributionBlockPrefix = "x-anthropic-billing-header:";

/**
 * Whether attribution blocks are kept: set once from the settings when the server is built (one
 * Maple process serves one configuration; a test that keeps them sets it back).
 */
let keep = false;

export function keepAttributionBlocks(value: boolean): void {
    keep = value;
}

/** The system blocks without Claude Code's attribution block (see above); other blocks and strings pass unchanged. */
export function withoutAttributionBlocks<Block extends { type: string }>(blocks: Block[]): Block[] {
    if (keep) return blocks;
    return blocks.filter((block) => !(block.type === "text" && typeof (block as { text?: unknown }).text === "string"
        && ((block as unknown as { text: string }).text).trimStart().startsWith(attributionBlockPrefix)));
}

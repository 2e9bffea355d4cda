/** Maple's `grammar` (GBNF) for exactly this output: the random-weight model writes it through the real engine. */
export function exact(text: string): string {
    return `root ::= ${JSON.stringify(text)}`;
}

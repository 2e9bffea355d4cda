/** One event of an Anthropic Messages stream: its `event:` name and parsed `data:`. */
export interface NamedEvent {
    event: string;
    data: Record<string, unknown>;
}

/** Reads a whole SSE response into its named events (Anthropic's `event:` + `data:` pairs). */
export async function readNamedEvents(response: Response): Promise<NamedEvent[]> {
    const text = await response.text();
    return text.split("\n\n").filter((block) => block.trim() !== "").map((block) => {
        const lines = block.split("\n");
        const event = lines.find((line) => line.startsWith("event: "))?.slice("event: ".length) ?? "message";
        const data = lines.find((line) => line.startsWith("data: "))?.slice("data: ".length) ?? "{}";
        return { event, data: JSON.parse(data) as Record<string, unknown> };
    });
}

/** Maple's `grammar` for exactly this output. */
export function exactly(text: string): string {
    return `root ::= ${JSON.stringify(text)}`;
}

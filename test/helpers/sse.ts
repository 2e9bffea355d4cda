import { createParser } from "eventsource-parser";

/** One Server-Sent Event as it was sent: its `event:` name (undefined when unnamed) and its `data:` text. */
export interface SseEvent {
    event: string | undefined;
    data: string;
}

/**
 * A whole SSE text, parsed by the spec (eventsource-parser, as the web chat reads it); a line
 * that is no SSE field fails the test. An event the text does not finish is dropped, as a client
 * would drop it.
 */
export function parseSse(text: string): SseEvent[] {
    const events: SseEvent[] = [];
    const parser = createParser({
        onEvent: (message) => events.push({ event: message.event, data: message.data }),
        onError: (error) => {
            throw new Error(`not an SSE line (${error.type}): ${JSON.stringify(error.line ?? error.value ?? "")}`);
        }
    });
    parser.feed(text);
    return events;
}

/** The `data:` payloads of an OpenAI stream's text (JSON parsed, "[DONE]" kept as a string). */
export function sseData(text: string): unknown[] {
    return parseSse(text).map(({ data }) => (data === "[DONE]" ? data : JSON.parse(data) as unknown));
}

/** Reads an OpenAI SSE response into its `data:` payloads (JSON parsed, "[DONE]" kept as a string). */
export async function readSse(response: Response): Promise<unknown[]> {
    return sseData(await response.text());
}

/** One event of a named-event stream (Anthropic's, the Responses API's): its `event:` name and parsed `data:`. */
export interface NamedEvent {
    event: string;
    data: Record<string, unknown>;
}

/** Reads a whole SSE response into its named events; an unnamed event is named `message`, as the spec says. */
export async function readNamedEvents(response: Response): Promise<NamedEvent[]> {
    return parseSse(await response.text()).map(({ event, data }) => ({ event: event ?? "message", data: JSON.parse(data) as Record<string, unknown> }));
}

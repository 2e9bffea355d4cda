import { randomBytes } from "node:crypto";

/**
 * Response ids carry their conversation's tag: `resp_` + 16 hex digits of tag + 24 random hex
 * digits. A continuation (`previous_response_id`) keeps its predecessor's tag, so every turn of a
 * conversation, and every GET, DELETE and cancel of its responses, names the same tag, which the
 * shipped balancers hash on (deploy/): the conversation stays on one replica, its prompt cache.
 * A first turn takes the tag its balancer minted and hashed it on (the `X-Maple-Conversation`
 * header), else a random one. Ids without a tag (older ones) are served as any other.
 */
const taggedId = /^resp_([0-9a-f]{16})[0-9a-f]{24}$/;
const tagShape = /^[0-9a-f]{16}$/;

/** The tag of a response id, or undefined for an id without one. */
export function conversationTagOf(responseId: string): string | undefined {
    return taggedId.exec(responseId)?.[1];
}

/** A new response's id: its predecessor's tag, else the balancer's, else a new one. */
export function newResponseId(previousResponseId: string | undefined, balancerTag: string | string[] | undefined): string {
    const offered = Array.isArray(balancerTag) ? balancerTag[0] : balancerTag;
    const tag = (previousResponseId === undefined ? undefined : conversationTagOf(previousResponseId))
        ?? (offered !== undefined && tagShape.test(offered) ? offered : randomBytes(8).toString("hex"));
    return `resp_${tag}${randomBytes(12).toString("hex")}`;
}

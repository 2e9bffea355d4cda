import type { ErrorKind, MapleError } from "../errors.js";

export type OpenAiErrorType = "invalid_request_error" | "authentication_error" | "not_found_error" | "server_error";

/** OpenAI's error body: what the openai SDK and LangChain read (CLIENTS.md). */
export interface OpenAiErrorBody {
    error: { message: string; type: OpenAiErrorType; param: string | null; code: string | null };
}

const typeOfKind: Record<ErrorKind, OpenAiErrorType> = {
    invalid_request: "invalid_request_error",
    request_timeout: "invalid_request_error",
    payload_too_large: "invalid_request_error",
    unsupported_media_type: "invalid_request_error",
    headers_too_large: "invalid_request_error",
    authentication: "authentication_error",
    not_found: "not_found_error",
    server: "server_error",
    overloaded: "server_error",
    unavailable: "server_error"
};

export function openAiErrorBody(error: MapleError): OpenAiErrorBody {
    return { error: { message: error.message, type: typeOfKind[error.kind], param: error.param, code: error.code } };
}

// Requests are checked against the operation in the OpenAPI document before the backend sees
// them: path and query parameters, the body's media type (one the operation's `content` declares),
// and a JSON body against that media type's schema.
// Validators were compiled once when the description loaded; the body is forwarded as the
// original bytes, never re-serialized.
import { isUtf8 } from "node:buffer";
import type { JSONSchemaType } from "ajv";
import { parseRequestJson } from "../../src/json/request-body.ts";
import { isJsonMediaType, mediaTypeMatcher } from "../../src/media-types.ts";
import type { MediaTypeSpec } from "../../src/openapi.ts";
import { checkParameter } from "../../src/parameters.ts";
import { declareErrors, definePolicy } from "../../src/policy.ts";
import { quotedClientText } from "../../src/redaction.ts";
import { describeSchemaError, untrustedValueWording } from "../../src/schema-error.ts";

/** How a body's schema error names the value: the client wrote it. */
const BODY_WORDING = untrustedValueWording("body");

export interface RequestValidationOptions {
  /** Query parameters the document does not declare: refused (400) or passed on unchecked. */
  readonly unknownQueryParameters: "reject" | "pass";
  readonly maxJsonDepth: number;
}

const errors = declareErrors("validation", {
  INVALID_PARAMETER: { status: 400, message: "A parameter is not valid" },
  UNKNOWN_PARAMETER: { status: 400, message: "A query parameter is not part of the operation" },
  BODY_NOT_ALLOWED: { status: 400, message: "The operation takes no request body" },
  MALFORMED_JSON: { status: 400, message: "The request body is not valid JSON" },
  INVALID_BODY: { status: 400, message: "The request body does not match the schema" },
  UNSUPPORTED_MEDIA_TYPE: {
    status: 415,
    message: "The request body must be of a media type the operation declares",
  },
});

const optionsSchema: JSONSchemaType<RequestValidationOptions> = {
  type: "object",
  additionalProperties: false,
  required: [],
  description:
    "Requests checked against their operation in the OpenAPI document before the backend sees them",
  properties: {
    unknownQueryParameters: {
      type: "string",
      enum: ["reject", "pass"],
      default: "reject",
      description: "`reject` (400 `UNKNOWN_PARAMETER`) or `pass` (forwarded unchecked)",
    },
    maxJsonDepth: {
      type: "integer",
      minimum: 1,
      maximum: 512,
      default: 32,
      description: "Deepest nesting of objects and arrays in a body",
    },
  },
};

export default definePolicy<RequestValidationOptions>({
  name: "requestValidation",
  errors,
  optionsSchema,
  plan(options) {
    return {
      operation(operation) {
        const lines = [
          `query parameters the operation does not declare: ${options.unknownQueryParameters === "reject" ? "refused (400 UNKNOWN_PARAMETER)" : "passed on unchecked"}`,
        ];
        const body = operation.requestBody;
        if (body) {
          lines.push(
            `a body not sent as ${body.mediaTypes.join(" or ")}: 415 UNSUPPORTED_MEDIA_TYPE; one sent as JSON is checked against its schema`,
          );
        }
        return {
          text: lines,
          data: {
            unknownQueryParameters: options.unknownQueryParameters,
            ...(body ? { mediaTypes: body.mediaTypes, maxJsonDepth: options.maxJsonDepth } : {}),
          },
        };
      },
    };
  },
  create(options) {
    const rejectUnknown = options.unknownQueryParameters === "reject";
    return {
      forOperation(operation) {
        const declared = operation.queryParameters;
        const required = [...declared.values()].filter((spec) => spec.required);
        const body = operation.requestBody;
        const unsupported =
          body &&
          errors.error(
            "UNSUPPORTED_MEDIA_TYPE",
            `the request body must be sent as Content-Type: ${body.mediaTypes.join(" or ")}`,
          );
        // The declared entry a request's body is read by (its JSON schema, or none).
        const matchDeclared = mediaTypeMatcher(body?.content ?? []);
        const mediaTypeOf = (contentType: string | undefined): MediaTypeSpec | undefined =>
          contentType === undefined ? undefined : matchDeclared(contentType);
        return {
          onRequest(exchange) {
            for (const spec of operation.pathParameters) {
              const check = checkParameter(spec, exchange.pathParams[spec.name] ?? "");
              if (!check.ok) return errors.error("INVALID_PARAMETER", check.message);
            }
            for (const [name, text] of exchange.query) {
              const spec = declared.get(name);
              if (spec === undefined) {
                if (rejectUnknown) {
                  return errors.error(
                    "UNKNOWN_PARAMETER",
                    `query parameter ${quotedClientText(name)} is not part of ${operation.id}`,
                  );
                }
                continue;
              }
              const check = checkParameter(spec, text);
              if (!check.ok) return errors.error("INVALID_PARAMETER", check.message);
            }
            for (const spec of required) {
              if (!exchange.query.has(spec.name)) {
                return errors.error("INVALID_PARAMETER", `query parameter ${spec.name} is required`);
              }
            }
            const headers = exchange.headers;
            const hasBody =
              headers["transfer-encoding"] !== undefined || (headers["content-length"] ?? "0") !== "0";
            if (body === undefined) {
              return hasBody
                ? errors.error("BODY_NOT_ALLOWED", `${operation.id} takes no request body`)
                : undefined;
            }
            if (hasBody && mediaTypeOf(headers["content-type"]) === undefined) return unsupported;
            return undefined;
          },
          onRequestBody(exchange) {
            if (body === undefined) return undefined;
            const raw = exchange.body;
            if (raw === undefined || raw.length === 0) {
              return body.required ? errors.error("INVALID_BODY", "the request body is required") : undefined;
            }
            const contentType = exchange.headers["content-type"] ?? "";
            const mediaType = mediaTypeOf(contentType);
            // A media type that is not JSON (text/plain, a form) has no schema the gateway can
            // apply: it passes as sent (start-up warned). A wildcard entry checks what is JSON.
            if (mediaType === undefined) return unsupported;
            if (!(mediaType.json || (mediaType.validate && isJsonMediaType(contentType)))) return undefined;
            // JSON is UTF-8 (RFC 8259); decoding would quietly turn bad bytes into U+FFFD while
            // the original bytes go on to the backend.
            if (!isUtf8(raw)) return errors.error("MALFORMED_JSON", "body is not valid UTF-8");
            const parsed = parseRequestJson(raw.toString("utf8"), options.maxJsonDepth);
            if (!parsed.ok) {
              return errors.error(
                parsed.problem === "malformed" ? "MALFORMED_JSON" : "INVALID_BODY",
                parsed.message,
              );
            }
            const { validate } = mediaType;
            if (validate && !validate(parsed.value)) {
              return errors.error("INVALID_BODY", describeSchemaError(validate.errors, BODY_WORDING));
            }
            return undefined;
          },
        };
      },
    };
  },
});

"""What the real APIs refuse, so that an adapter that is wrong fails against the fake too.

Every rule here cites what the provider's published API reference says. Where a reference is
silent the fake does not guess; those places say so. Each check returns a problem as
``(status, code, message)`` or None, and the provider module renders it in its own error shape.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from aiohttp import web

__all__ = [
    "ANTHROPIC_BATCH_MAX_REQUESTS",
    "ANTHROPIC_MESSAGE_FIELDS",
    "ANTHROPIC_VERSIONS",
    "AZURE_API_VERSIONS",
    "AZURE_BATCH_ENDPOINTS",
    "BATCH_ENDPOINTS",
    "BATCH_MAX_BYTES",
    "BATCH_MAX_REQUESTS",
    "GEMINI_GENERATE_FIELDS",
    "GEMINI_INLINE_BATCH_MAX_BYTES",
    "Problem",
    "anthropic_batch_problem",
    "anthropic_body_problem",
    "anthropic_headers_problem",
    "auth_problem",
    "azure_api_version_problem",
    "batch_lines_problem",
    "bedrock_job_problem",
    "gemini_body_problem",
    "openai_chat_body_problem",
    "openai_chat_path_problem",
    "vertex_job_problem",
]

Problem = tuple[int, str, str]

#: The chat-completions paths the OpenAI-compatible services serve (each vendor's API reference):
#: OpenAI, DeepSeek, Cerebras, Mistral, Hugging Face router, vLLM and Ollama ``/v1/...``; Groq and
#: the Azure OpenAI v1 surface ``/openai/v1/...``; OpenRouter ``/api/v1/...``; Cohere
#: ``/compatibility/v1/...``; DeepInfra ``/v1/openai/...``; Azure OpenAI deployments
#: ``/openai/deployments/{deployment}/...``; Azure AI model inference ``/models/...`` and GitHub
#: Models (``models.inference.ai.azure.com``) at the root.
_OPENAI_CHAT_PATH = re.compile(
    r"^(/v1|/openai/v1|/api/v1|/compatibility/v1|/v1/openai|/openai/deployments/[^/]+|/models)?/chat/completions$"
)

#: Versions the ``anthropic-version`` header may name (Anthropic "Versions" page, plus the one
#: anthropic 2.x sends, measured in notes/provider-sdks.md). The API answers 400 otherwise.
ANTHROPIC_VERSIONS = frozenset({"2023-01-01", "2023-06-01", "2026-10-21"})

#: Azure OpenAI data-plane ``api-version`` values (Azure OpenAI REST reference: GA and preview
#: versions). An unsupported value is answered 404 "Resource not found" by the service.
AZURE_API_VERSIONS = frozenset(
    {
        "2024-02-01", "2024-06-01", "2024-10-21", "2025-04-01-preview", "2025-03-01-preview",
        "2024-12-01-preview", "2024-10-01-preview", "2024-08-01-preview", "2024-07-01-preview",
    }
)  # fmt: skip

#: The batch ``endpoint`` values of OpenAI's ``POST /v1/batches`` (openapi spec enum); Azure
#: uses the same endpoints without the ``/v1`` prefix. The fake answers chat completions only,
#: so lines for the other endpoints fail there as the real service would fail a chat body.
BATCH_ENDPOINTS = frozenset({"/v1/chat/completions", "/v1/completions", "/v1/embeddings", "/v1/responses"})
AZURE_BATCH_ENDPOINTS = frozenset({"/chat/completions", "/completions", "/embeddings", "/responses"})
#: OpenAI batch limits (Batch API guide): 50,000 requests and 200 MB per input file.
BATCH_MAX_REQUESTS = 50_000
BATCH_MAX_BYTES = 200 * 1024 * 1024


def _bearer(request: web.Request) -> bool:
    value = request.headers.get("Authorization", "")
    return value.startswith("Bearer ") and bool(value[len("Bearer ") :].strip())


def _header(request: web.Request, name: str) -> bool:
    return bool(request.headers.get(name, "").strip())


def auth_problem(route: str, request: web.Request) -> Problem | None:
    """The credential each API requires, in the scheme it documents; None when present."""
    family = route.split(".", 1)[0]
    if family == "openai":  # OpenAI: Bearer; Azure OpenAI deployments: api-key (or Entra Bearer)
        if _bearer(request) or ("/openai/deployments/" in request.path and _header(request, "api-key")):
            return None
        return 401, "missing_api_key", "You didn't provide an API key. Provide it in an Authorization header (Bearer)."
    if family == "anthropic":  # x-api-key; anthropic 2.x sends Authorization: Bearer (notes)
        if _header(request, "x-api-key") or _bearer(request):
            return None
        return 401, "authentication_error", "x-api-key header is required"
    if family == "gemini":  # API key in x-goog-api-key or the key query parameter
        if _header(request, "x-goog-api-key") or request.query.get("key"):
            return None
        return 403, "permission_denied", "Method doesn't allow unregistered callers (callers without established identity)."
    if family == "vertex":  # OAuth access token, or an express-mode API key
        if _bearer(request) or _header(request, "x-goog-api-key"):
            return None
        return 401, "unauthenticated", "Request is missing required authentication credential."
    if family == "bedrock":  # SigV4, or a Bedrock API key as Bearer
        auth = request.headers.get("Authorization", "")
        if auth.startswith("AWS4-HMAC-SHA256 Credential=") or _bearer(request):
            return None
        return 403, "MissingAuthenticationTokenException", "Missing Authentication Token"
    return None


def openai_chat_path_problem(path: str) -> Problem | None:
    if _OPENAI_CHAT_PATH.match(path):
        return None
    return 404, "not_found", f"Invalid URL (POST {path})"


def azure_api_version_problem(request: web.Request) -> Problem | None:
    """Azure's deployment routes need a supported ``api-version`` query parameter."""
    if "/openai/deployments/" not in request.path and not request.path.startswith("/openai/files") \
            and not request.path.startswith("/openai/batches"):
        return None
    version = request.query.get("api-version")
    if version is None:
        return 404, "404", "Resource not found (api-version query parameter is missing)"
    if version not in AZURE_API_VERSIONS:
        return 404, "404", f"Resource not found (unsupported api-version {version})"
    return None


def anthropic_headers_problem(request: web.Request) -> Problem | None:
    version = request.headers.get("anthropic-version")
    if version is None:
        return 400, "invalid_request_error", "anthropic-version: header is required"
    if version not in ANTHROPIC_VERSIONS:
        return 400, "invalid_request_error", f"anthropic-version: invalid version {version!r}"
    return None


def batch_lines_problem(lines: Sequence[Mapping[str, Any]], endpoint: str) -> Problem | None:
    """OpenAI's batch input rules: each line has a unique ``custom_id``, ``method: POST`` and a
    ``url`` equal to the batch's ``endpoint`` (Batch API guide); at most 50,000 lines."""
    if len(lines) > BATCH_MAX_REQUESTS:
        return 400, "too_many_requests", f"a batch may hold at most {BATCH_MAX_REQUESTS} requests, got {len(lines)}"
    seen: set[str] = set()
    for number, line in enumerate(lines, start=1):
        custom_id = line.get("custom_id")
        if not isinstance(custom_id, str) or not custom_id:
            return 400, "missing_required_parameter", f"line {number}: custom_id is required"
        if custom_id in seen:
            return 400, "duplicate_custom_id", f"line {number}: custom_id {custom_id!r} is not unique"
        seen.add(custom_id)
        if line.get("method") != "POST":
            return 400, "invalid_method", f"line {number}: method must be POST, got {line.get('method')!r}"
        if line.get("url") != endpoint:
            return 400, "mismatched_url", f"line {number}: url {line.get('url')!r} does not match the batch endpoint {endpoint!r}"
        if not isinstance(line.get("body"), dict):
            return 400, "invalid_body", f"line {number}: body must be an object"
    return None


# ---- request bodies ---------------------------------------------------------------------------
_OPENAI_ROLES = frozenset({"system", "developer", "user", "assistant", "tool", "function"})


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1


def openai_chat_body_problem(body: Any) -> Problem | None:
    """Required fields and types of ``CreateChatCompletionRequest`` (openai-openapi spec).

    Unknown fields are not refused: OpenAI does, but vLLM, DeepSeek, Mistral and others serve
    the same path and document their own extra fields (``top_k``, ``min_p``, ...), and the fake
    cannot tell them apart by path.
    """
    if not isinstance(body, dict):
        return 400, "invalid_request_error", "the request body must be a JSON object"
    if not isinstance(body.get("model"), str) or not body["model"]:
        return 400, "missing_required_parameter", "Missing required parameter: 'model'."
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return 400, "missing_required_parameter", "Missing required parameter: 'messages'."
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in _OPENAI_ROLES:
            return 400, "invalid_value", f"Invalid value for 'messages[{i}].role'."
    for key in ("max_tokens", "max_completion_tokens", "n"):
        if key in body and body[key] is not None and not _positive_int(body[key]):
            return 400, "invalid_type", f"Invalid type for '{key}': expected an integer >= 1."
    temperature = body.get("temperature")
    if temperature is not None and not (isinstance(temperature, int | float) and 0 <= temperature <= 2):
        return 400, "decimal_above_max_value", "Invalid 'temperature': expected a number from 0 to 2."
    return None


#: Top-level fields of the Messages API request (Anthropic API reference, "Create a Message").
#: The API refuses any other with "Extra inputs are not permitted".
ANTHROPIC_MESSAGE_FIELDS = frozenset(
    {
        "model", "messages", "max_tokens", "system", "metadata", "stop_sequences", "stream", "temperature",
        "top_p", "top_k", "tools", "tool_choice", "thinking", "service_tier", "container", "mcp_servers",
        "context_management", "output_config",
    }
)  # fmt: skip


def anthropic_body_problem(body: Any) -> Problem | None:
    if not isinstance(body, dict):
        return 400, "invalid_request_error", "the request body must be a JSON object"
    for key in body:
        if key not in ANTHROPIC_MESSAGE_FIELDS:
            return 400, "invalid_request_error", f"{key}: Extra inputs are not permitted"
    if not isinstance(body.get("model"), str):
        return 400, "invalid_request_error", "model: Field required"
    if not _positive_int(body.get("max_tokens")):
        return 400, "invalid_request_error", "max_tokens: Field required (an integer >= 1)"
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        return 400, "invalid_request_error", "messages: Field required"
    for i, m in enumerate(messages):
        if not isinstance(m, dict) or m.get("role") not in ("user", "assistant"):
            return 400, "invalid_request_error", f"messages.{i}.role: Input should be 'user' or 'assistant'"
    return None


#: Top-level fields of ``GenerateContentRequest`` (Gemini API reference), in the proto-JSON
#: camelCase and snake_case spellings both accepted. Any other is refused with
#: 'Invalid JSON payload received. Unknown name'.
GEMINI_GENERATE_FIELDS = frozenset(
    {
        "model", "contents", "tools", "toolConfig", "tool_config", "safetySettings", "safety_settings",
        "systemInstruction", "system_instruction", "generationConfig", "generation_config", "cachedContent",
        "cached_content", "labels",
    }
)  # fmt: skip


def gemini_body_problem(body: Any) -> Problem | None:
    if not isinstance(body, dict):
        return 400, "invalid_argument", "Invalid JSON payload received."
    for key in body:
        if key not in GEMINI_GENERATE_FIELDS:
            return 400, "invalid_argument", f'Invalid JSON payload received. Unknown name "{key}": Cannot find field.'
    if not isinstance(body.get("contents"), list) or not body["contents"]:
        return 400, "invalid_argument", "* GenerateContentRequest.contents: contents is not specified"
    return None


#: Message Batches limits (Anthropic API reference): 100,000 requests per batch; each
#: ``custom_id`` unique within the batch and matching this pattern.
ANTHROPIC_BATCH_MAX_REQUESTS = 100_000
_ANTHROPIC_CUSTOM_ID = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")


def anthropic_batch_problem(body: Any) -> Problem | None:
    items = body.get("requests") if isinstance(body, dict) else None
    if not isinstance(items, list) or not items:
        return 400, "invalid_request_error", "requests: Field required"
    if len(items) > ANTHROPIC_BATCH_MAX_REQUESTS:
        return 400, "invalid_request_error", f"requests: at most {ANTHROPIC_BATCH_MAX_REQUESTS} items"
    seen: set[str] = set()
    for i, item in enumerate(items):
        custom_id = item.get("custom_id") if isinstance(item, dict) else None
        if not isinstance(custom_id, str) or not _ANTHROPIC_CUSTOM_ID.match(custom_id):
            return 400, "invalid_request_error", f"requests.{i}.custom_id: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
        if custom_id in seen:
            return 400, "invalid_request_error", f"requests.{i}.custom_id: duplicate custom_id {custom_id!r}"
        seen.add(custom_id)
        if (problem := anthropic_body_problem(item.get("params"))) is not None:
            return problem[0], problem[1], f"requests.{i}.params.{problem[2]}"
    return None


#: CreateModelInvocationJob (Amazon Bedrock API reference): name and role patterns.
_BEDROCK_JOB_NAME = re.compile(r"^[a-zA-Z0-9]{1,63}(-*[a-zA-Z0-9\+\-\.]){0,63}$")
_BEDROCK_ROLE_ARN = re.compile(r"^arn:aws(-[^:]+)?:iam::([0-9]{12})?:role/.+$")


def bedrock_job_problem(body: Any, records: list[Mapping[str, Any]]) -> Problem | None:
    """The job request and its JSONL records. Each record is ``{"recordId", "modelInput"}``; an
    Anthropic model's input names ``anthropic_version: bedrock-2023-05-31`` (Bedrock's Claude
    request reference). The documented minimum of 100 records per job is a service quota that
    accounts can raise or lower, so the fake does not enforce it."""
    if not isinstance(body.get("jobName"), str) or not _BEDROCK_JOB_NAME.match(body["jobName"]):
        return 400, "ValidationException", "jobName: does not match the required pattern"
    if not isinstance(body.get("roleArn"), str) or not _BEDROCK_ROLE_ARN.match(body["roleArn"]):
        return 400, "ValidationException", "roleArn: does not match the required pattern"
    anthropic = str(body.get("modelId", "")).startswith(("anthropic.", "us.anthropic.", "eu.anthropic.", "global.anthropic."))
    seen: set[str] = set()
    for number, record in enumerate(records, start=1):
        record_id = record.get("recordId")
        if not isinstance(record_id, str) or not record_id or record_id in seen:
            return 400, "ValidationException", f"record {number}: recordId missing or not unique"
        seen.add(record_id)
        model_input = record.get("modelInput")
        if not isinstance(model_input, dict):
            return 400, "ValidationException", f"record {number}: modelInput must be an object"
        if anthropic and model_input.get("anthropic_version") != "bedrock-2023-05-31":
            return 400, "ValidationException", f"record {number}: modelInput.anthropic_version must be bedrock-2023-05-31"
    return None


#: Gemini Batch Mode (Gemini API docs): inline requests are for batches under 20 MB in total;
#: larger ones go through an uploaded JSONL file.
GEMINI_INLINE_BATCH_MAX_BYTES = 20 * 1024 * 1024


def vertex_job_problem(body: Any) -> Problem | None:
    """``BatchPredictionJob`` (Vertex AI REST reference): ``displayName`` and ``model`` are
    required; Gemini batch input and output are ``jsonl`` in Cloud Storage."""
    if not isinstance(body, dict):
        return 400, "invalid_argument", "the request body must be a JSON object"
    for field in ("displayName", "model"):
        if not isinstance(body.get(field), str) or not body[field]:
            return 400, "invalid_argument", f"BatchPredictionJob.{field} is required"
    if (body.get("inputConfig") or {}).get("instancesFormat") != "jsonl":
        return 400, "invalid_argument", "inputConfig.instancesFormat must be jsonl for Gemini models"
    if (body.get("outputConfig") or {}).get("predictionsFormat") != "jsonl":
        return 400, "invalid_argument", "outputConfig.predictionsFormat must be jsonl for Gemini models"
    return None

"""A local fake of the model providers' HTTP APIs, for tests and benchmarks.

Real SDK clients (openai, anthropic, google-genai, boto3) talk to it over 127.0.0.1:
OpenAI-compatible chat/files/batches (also Azure, Groq, OpenRouter, Cohere, DeepInfra paths and
Mistral batch jobs), Anthropic messages and message batches, Gemini / Vertex generateContent and
batch jobs (with file upload and a mini Cloud Storage), Bedrock Converse and model invocation
jobs (with a mini S3). Replies are deterministic functions of the prompt, and valid instances
of the JSON schema when the request carries one. Faults are queued per route; batch jobs run
the full life cycle (pending, running, completed with failed lines, expired, failed).

``python -m coeval_testing.fake_server --port 0 --latency-ms 200`` prints its URL;
:class:`FakeServer` runs it in a background thread for tests.
"""

from coeval_testing.fake_server._app import make_app
from coeval_testing.fake_server._core import make_reply
from coeval_testing.fake_server._runner import FakeServer, serve
from coeval_testing.fake_server._schema import schema_instance
from coeval_testing.fake_server._state import FAULT_KINDS, REJECTED_KEY_PREFIX, FakeConfig, FakeState, Fault

__all__ = [
    "FAULT_KINDS",
    "REJECTED_KEY_PREFIX",
    "FakeConfig",
    "FakeServer",
    "FakeState",
    "Fault",
    "make_app",
    "make_reply",
    "schema_instance",
    "serve",
]

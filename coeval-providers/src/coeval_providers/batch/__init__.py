"""Provider batch runners (the :class:`coeval.scheduler.batching.BatchRunner` contract), one per provider
with a batch API: OpenAI, Azure OpenAI, Anthropic, Gemini, Vertex AI, Bedrock, Mistral.

A runner submits one job for one model, polls it and collects per-request results; the core's
batch executor (``coeval.scheduler.batching``) chunks, persists job ids before polling, and turns
results into records. Runners reuse their interface's client, request body and reply parser,
so a batch record is identical to a real-time one.
"""

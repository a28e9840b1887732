"""A minimal object store speaking just enough S3 (path style) and Cloud Storage JSON API for the
batch runners: put, get, list. One dict holds both; buckets spring into existence on first use."""

from __future__ import annotations

import hashlib
import json
from urllib.parse import unquote
from xml.sax.saxutils import escape

from aiohttp import web

from coeval_testing.fake_server._core import STATE

__all__ = ["add_gcs_routes", "add_s3_routes", "gcs_split", "s3_split"]


def s3_split(uri: str) -> tuple[str, str]:
    """``s3://bucket/key`` -> (bucket, key)."""
    rest = uri.split("://", 1)[1]
    bucket, _, key = rest.partition("/")
    return bucket, key


gcs_split = s3_split


# ---- S3 ------------------------------------------------------------------------------------------
def _raw_key(request: web.Request, bucket: str) -> str:
    raw = request.raw_path.split("?", 1)[0]
    return unquote(raw[len(f"/{bucket}/") :])


async def s3_put(request: web.Request) -> web.Response:
    state = request.app[STATE]
    bucket = request.match_info["bucket"]
    key = _raw_key(request, bucket)
    body = await request.read()
    state.objects[(bucket, key)] = body
    state.record("s3.put", {"method": "PUT", "path": request.path, "bytes": len(body)})
    return web.Response(status=200, headers={"ETag": f'"{hashlib.md5(body).hexdigest()}"'})


async def s3_get(request: web.Request) -> web.Response:
    state = request.app[STATE]
    bucket = request.match_info["bucket"]
    key = _raw_key(request, bucket)
    state.record("s3.get", {"method": "GET", "path": request.path})
    if (bucket, key) not in state.objects:
        body = f"<?xml version='1.0' encoding='UTF-8'?><Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message><Key>{escape(key)}</Key></Error>"
        return web.Response(status=404, body=body.encode(), content_type="application/xml")
    return web.Response(body=state.objects[(bucket, key)], content_type="application/octet-stream")


async def s3_bucket(request: web.Request) -> web.Response:
    """``PUT /bucket`` creates a bucket; ``GET /bucket?list-type=2&prefix=`` lists keys."""
    state = request.app[STATE]
    bucket = request.match_info["bucket"]
    if request.method == "PUT":
        return web.Response(status=200)
    prefix = request.query.get("prefix", "")
    keys = sorted(k for (b, k) in state.objects if b == bucket and k.startswith(prefix))
    contents = "".join(
        f"<Contents><Key>{escape(k)}</Key><Size>{len(state.objects[(bucket, k)])}</Size><StorageClass>STANDARD</StorageClass></Contents>"
        for k in keys
    )
    xml = (
        "<?xml version='1.0' encoding='UTF-8'?>"
        '<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">'
        f"<Name>{escape(bucket)}</Name><Prefix>{escape(prefix)}</Prefix><KeyCount>{len(keys)}</KeyCount>"
        f"<MaxKeys>1000</MaxKeys><IsTruncated>false</IsTruncated>{contents}</ListBucketResult>"
    )
    return web.Response(body=xml.encode(), content_type="application/xml")


def add_s3_routes(app: web.Application) -> None:
    """Added last: the catch-all bucket routes must not shadow provider routes."""
    r = app.router
    r.add_route("PUT", "/{bucket}", s3_bucket)
    r.add_get("/{bucket}", s3_bucket)
    r.add_put("/{bucket}/{key:.+}", s3_put)
    r.add_get("/{bucket}/{key:.+}", s3_get)


# ---- Cloud Storage JSON API --------------------------------------------------------------------
def _gcs_object(bucket: str, name: str, size: int) -> dict[str, object]:
    return {"kind": "storage#object", "bucket": bucket, "name": name, "size": str(size), "id": f"{bucket}/{name}"}


async def gcs_upload(request: web.Request) -> web.Response:
    state = request.app[STATE]
    bucket = request.match_info["bucket"]
    name = request.query.get("name", "")
    body = await request.read()
    state.objects[(bucket, name)] = body
    state.record("gcs.upload", {"method": "POST", "path": request.path, "bytes": len(body)})
    return web.json_response(_gcs_object(bucket, name, len(body)))


async def gcs_list(request: web.Request) -> web.Response:
    state = request.app[STATE]
    bucket = request.match_info["bucket"]
    prefix = request.query.get("prefix", "")
    items = [_gcs_object(bucket, k, len(v)) for (b, k), v in sorted(state.objects.items()) if b == bucket and k.startswith(prefix)]
    return web.json_response({"kind": "storage#objects", "items": items})


async def gcs_get(request: web.Request) -> web.Response:
    state = request.app[STATE]
    bucket = request.match_info["bucket"]
    raw = request.raw_path.split("?", 1)[0]
    name = unquote(raw.split(f"/b/{bucket}/o/", 1)[1])
    state.record("gcs.get", {"method": "GET", "path": request.path})
    data = state.objects.get((bucket, name))
    if data is None:
        return web.json_response({"error": {"code": 404, "message": f"No such object: {bucket}/{name}"}}, status=404)
    if request.query.get("alt") == "media":
        return web.Response(body=data, content_type="application/octet-stream")
    return web.Response(body=json.dumps(_gcs_object(bucket, name, len(data))).encode(), content_type="application/json")


def add_gcs_routes(app: web.Application) -> None:
    r = app.router
    r.add_post("/upload/storage/v1/b/{bucket}/o", gcs_upload)
    r.add_get("/storage/v1/b/{bucket}/o", gcs_list)
    r.add_get("/storage/v1/b/{bucket}/o/{name:.+}", gcs_get)

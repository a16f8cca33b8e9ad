"""Errors the client raises: the server's RFC 9457 problem, as an exception."""

from __future__ import annotations

from typing import Any

import httpx
import msgspec


class ArmadaApiError(Exception):
    """The server refused a request; carries its problem detail and the field it names."""

    def __init__(self, status: int, title: str, detail: str, field: str | None = None) -> None:
        super().__init__(f"{detail} (field {field})" if field else detail)
        self.status = status
        self.title = title
        self.detail = detail
        self.field = field

    @classmethod
    def from_response(cls, response: httpx.Response) -> ArmadaApiError:
        try:
            body: Any = msgspec.json.decode(response.content)
        except msgspec.DecodeError:
            body = None
        if not isinstance(body, dict):
            text = response.text.strip() or response.reason_phrase
            return cls(response.status_code, response.reason_phrase, text)
        return cls(
            response.status_code,
            str(body.get("title", response.reason_phrase)),
            str(body.get("detail", "")),
            body.get("field"),
        )

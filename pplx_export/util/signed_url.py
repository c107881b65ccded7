"""The signature parameters of a signed URL: the one list the capture bundle and the raw
files both drop."""

from __future__ import annotations

# Query parameters of signed URLs (CloudFront, S3, GCS, the emulator): a credential for
# whoever holds the link, valid for hours; never recorded. Compared lower-cased.
SIGNATURE_PARAMS = frozenset(
    {
        "signature",
        "x-amz-signature",
        "x-amz-credential",
        "x-amz-security-token",
        "x-goog-signature",
        "x-goog-credential",
        "key-pair-id",
        "policy",
        "sig",
        "token",
    }
)


def is_signature_param(name: str) -> bool:
    """Whether a query parameter `name` is a signed URL's credential."""
    return name.lower() in SIGNATURE_PARAMS

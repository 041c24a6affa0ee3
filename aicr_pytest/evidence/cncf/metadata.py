"""PRODUCT.yaml's metadata options: constants only, read by the option rows at pytest start-up."""

from __future__ import annotations

from typing import Final

#: the product metadata options: (:class:`~aicr_pytest.evidence.cncf.product.ProductMetadata` field,
#: flag, the template's metadata key, metavar); the option table declares one option per row
METADATA_OPTIONS: Final[tuple[tuple[str, str, str, str], ...]] = (
    ("platform_name", "--cncf-platform-name", "platformName", "NAME"),
    ("platform_version", "--cncf-platform-version", "platformVersion", "VERSION"),
    ("vendor_name", "--cncf-vendor-name", "vendorName", "NAME"),
    ("website_url", "--cncf-website-url", "websiteUrl", "URL"),
    ("repo_url", "--cncf-repo-url", "repoUrl", "URL"),
    ("documentation_url", "--cncf-documentation-url", "documentationUrl", "URL"),
    ("product_logo_url", "--cncf-product-logo-url", "productLogoUrl", "URL"),
    ("description", "--cncf-description", "description", "TEXT"),
    ("contact_email_address", "--cncf-contact-email", "contactEmailAddress", "EMAIL"),
    ("k8s_conformance_url", "--cncf-k8s-conformance-url", "k8sConformanceUrl", "URL"),
)
#: metadata field -> its flag
METADATA_FLAGS: Final[dict[str, str]] = {field: flag for field, flag, _, _ in METADATA_OPTIONS}


__all__ = ["METADATA_FLAGS", "METADATA_OPTIONS"]

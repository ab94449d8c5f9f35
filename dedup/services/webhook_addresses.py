"""Where webhooks may point: http(s) addresses that resolve to public IP addresses only, checked
when a webhook is saved and again as each delivery connects (to the very address checked, so a
name that resolves elsewhere the second time, DNS rebinding, reaches nothing private).

DEDUP_WEBHOOK_ALLOW_PRIVATE lets private addresses through (a receiver on this machine in
tests, or on the same network by choice); it is off by default.
"""

from __future__ import annotations

import http.client
import ipaddress
import socket
import urllib.request
from urllib.parse import urlsplit

from django.conf import settings as django_settings

from dedup.errors import DedupError

SCHEMES = ("http", "https")
NAT64 = ipaddress.ip_network("64:ff9b::/96")


class WebhookUrlRefused(DedupError):
    """A webhook's address is not http(s), or reaches a loopback, private or reserved one."""


class AddressRefused(OSError):
    """A delivery's host resolved to an address it may not reach (an OSError: a failed try)."""


def address_public(ip: str) -> bool:
    """Return whether an IP address is a public one (also one inside an IPv6 wrapping)."""
    address = ipaddress.ip_address(ip.split("%", 1)[0])  # an IPv6 zone: fe80::1%eth0
    if address.version == 6:
        if address.ipv4_mapped:
            address = address.ipv4_mapped
        elif address.sixtofour:
            address = address.sixtofour
        elif address.teredo:
            address = address.teredo[1]
        elif address in NAT64:
            address = ipaddress.ip_address(int(address) & 0xFFFFFFFF)
    return address.is_global and not address.is_multicast


def _private_allowed() -> bool:
    return bool(getattr(django_settings, "DEDUP_WEBHOOK_ALLOW_PRIVATE", False))


def _resolve(host: str, port: int) -> list[tuple]:
    """Return the addresses of a host, refusing them all if any is not public."""
    try:
        found = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise AddressRefused(f"{host} does not resolve: {exc}") from None
    if not _private_allowed():
        for *_, sockaddr in found:
            if not address_public(sockaddr[0]):
                raise AddressRefused(
                    f"{host} resolves to {sockaddr[0]}, not a public address; webhooks reach "
                    "public addresses only (DEDUP_WEBHOOK_ALLOW_PRIVATE)"
                )
    return found


def webhook_url_check(url: str) -> None:
    """Refuse a webhook address that is not http(s) or resolves to a non-public address."""
    parts = urlsplit(url)
    if parts.scheme.lower() not in SCHEMES or not parts.hostname:
        raise WebhookUrlRefused(f"{url}: a webhook's address starts with https:// or http://.")
    try:
        port = parts.port or (443 if parts.scheme.lower() == "https" else 80)
        _resolve(parts.hostname, port)
    except ValueError:
        raise WebhookUrlRefused(f"{url}: the port is not a number from 0 to 65535.") from None
    except AddressRefused as exc:
        raise WebhookUrlRefused(f"{url}: {exc}.") from None


def _connect(address, timeout=socket._GLOBAL_DEFAULT_TIMEOUT, source_address=None, **_):
    """socket.create_connection to the addresses checked, never to a name resolved again."""
    host, port = address
    error: OSError | None = None
    for family, kind, proto, _name, sockaddr in _resolve(host, port):
        sock = socket.socket(family, kind, proto)
        try:
            if timeout is not socket._GLOBAL_DEFAULT_TIMEOUT:
                sock.settimeout(timeout)
            if source_address:
                sock.bind(source_address)
            sock.connect(sockaddr)
            return sock
        except OSError as exc:
            sock.close()
            error = exc
    raise error or AddressRefused(f"{host} has no address")


class _HTTPConnection(http.client.HTTPConnection):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._create_connection = _connect


class _HTTPSConnection(http.client.HTTPSConnection):  # TLS still checks the name, not the IP
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._create_connection = _connect


class _HTTPHandler(urllib.request.HTTPHandler):
    def http_open(self, req):
        return self.do_open(_HTTPConnection, req)


class _HTTPSHandler(urllib.request.HTTPSHandler):
    def https_open(self, req):
        return self.do_open(_HTTPSConnection, req, context=self._context)


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None  # a redirect is an answer like any other: not followed with the body


def opener() -> urllib.request.OpenerDirector:
    """Return an opener of http(s) only (no file:, ftp:, proxies or redirects), connecting to
    public addresses only."""
    director = urllib.request.OpenerDirector()
    for handler in (
        _HTTPHandler(),
        _HTTPSHandler(),
        urllib.request.HTTPDefaultErrorHandler(),
        urllib.request.HTTPErrorProcessor(),
        urllib.request.UnknownHandler(),  # any other scheme: URLError
        _NoRedirects(),
    ):
        director.add_handler(handler)
    return director

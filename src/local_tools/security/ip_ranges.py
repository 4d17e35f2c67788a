"""Addresses a web tool must not reach: this machine, the LAN, cloud metadata, and the
IPv6 forms that carry one of those inside.

Explicit ranges rather than ``ipaddress``'s ``is_private``/``is_global``: those flags
have moved between Python versions and miss forms that matter here (an IPv4 address
embedded in NAT64, 6to4 or Teredo is judged by its own IPv4 part only here).
"""

from __future__ import annotations

import contextlib
import ipaddress
import socket

__all__ = ["IPAddress", "blocked_reason", "embedded_ipv4", "this_machine"]

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address

_V4: tuple[tuple[str, str], ...] = (
    ("0.0.0.0/8", "'this network' (0.0.0.0/8)"),
    ("10.0.0.0/8", "a private address (RFC 1918)"),
    ("100.64.0.0/10", "a carrier-grade NAT address (100.64.0.0/10)"),
    ("127.0.0.0/8", "loopback (this machine)"),
    ("169.254.0.0/16", "link-local (cloud metadata lives at 169.254.169.254)"),
    ("172.16.0.0/12", "a private address (RFC 1918)"),
    ("192.0.0.0/24", "IETF protocol assignments (192.0.0.0/24)"),
    ("192.0.2.0/24", "a documentation range (TEST-NET-1)"),
    ("192.88.99.0/24", "the 6to4 relay anycast range"),
    ("192.168.0.0/16", "a private address (RFC 1918)"),
    ("198.18.0.0/15", "the benchmarking range (198.18.0.0/15)"),
    ("198.51.100.0/24", "a documentation range (TEST-NET-2)"),
    ("203.0.113.0/24", "a documentation range (TEST-NET-3)"),
    ("224.0.0.0/4", "multicast"),
    ("240.0.0.0/4", "reserved (240.0.0.0/4, broadcast included)"),
)
_V6: tuple[tuple[str, str], ...] = (
    ("::/128", "the unspecified address (::)"),
    ("::1/128", "loopback (this machine)"),
    ("100::/64", "the discard-only range (100::/64)"),
    ("2001:db8::/32", "a documentation range (2001:db8::/32)"),
    ("2001:10::/28", "ORCHID (2001:10::/28)"),
    ("2001:2::/48", "the benchmarking range (2001:2::/48)"),
    ("fc00::/7", "a unique local address (fc00::/7, the IPv6 LAN)"),
    ("fe80::/10", "link-local"),
    ("fec0::/10", "site-local (fec0::/10)"),
    ("ff00::/8", "multicast"),
)
_V4_NETS = tuple((ipaddress.IPv4Network(net), why) for net, why in _V4)
_V6_NETS = tuple((ipaddress.IPv6Network(net), why) for net, why in _V6)

# IPv6 forms that carry an IPv4 address, and where it sits.
_MAPPED = ipaddress.IPv6Network("::ffff:0:0/96")
_TRANSLATED = ipaddress.IPv6Network("::ffff:0:0:0/96")  # SIIT
_COMPATIBLE = ipaddress.IPv6Network("::/96")
_NAT64 = ipaddress.IPv6Network("64:ff9b::/96")
_NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")
_SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")
_TEREDO = ipaddress.IPv6Network("2001::/32")


def embedded_ipv4(address: ipaddress.IPv6Address) -> list[tuple[ipaddress.IPv4Address, str]]:
    """The IPv4 addresses an IPv6 address carries, each with the form's name."""
    value = int(address)
    low32 = ipaddress.IPv4Address(value & 0xFFFFFFFF)
    if address in _MAPPED:
        return [(low32, "IPv4-mapped")]
    if address in _TRANSLATED:
        return [(low32, "IPv4-translated")]
    if address in _COMPATIBLE and value > 1:  # :: and ::1 are judged as IPv6
        return [(low32, "IPv4-compatible")]
    if address in _NAT64 or address in _NAT64_LOCAL:
        return [(low32, "NAT64")]
    if address in _SIX_TO_FOUR:
        return [(ipaddress.IPv4Address((value >> 80) & 0xFFFFFFFF), "6to4")]
    if address in _TEREDO:
        server = ipaddress.IPv4Address((value >> 64) & 0xFFFFFFFF)
        client = ipaddress.IPv4Address(~value & 0xFFFFFFFF)  # stored XOR-ed with ones
        return [(server, "Teredo server"), (client, "Teredo client")]
    return []


def blocked_reason(address: IPAddress) -> str | None:
    """Why `address` is off limits for outbound web requests, or None when it is public."""
    if isinstance(address, ipaddress.IPv4Address):
        for net, why in _V4_NETS:
            if address in net:
                return why
        return None
    if address.scope_id:
        return "an IPv6 address with a zone (link-local)"
    embedded = embedded_ipv4(address)
    for v4, form in embedded:
        inner = blocked_reason(v4)
        if inner is not None:
            return f"{inner}, inside an {form} IPv6 address ({v4})"
    if embedded:  # a public IPv4 address reached through IPv6 (NAT64 on IPv6-only networks)
        return None
    for net6, why in _V6_NETS:
        if address in net6:
            return why
    # Only global unicast (2000::/3) is public; anything else is unassigned or special.
    if int(address) >> 125 != 0b001:
        return "outside IPv6 global unicast (2000::/3)"
    return None


_LOOPBACK_V4 = ipaddress.IPv4Network("127.0.0.0/8")
_THIS_NETWORK = ipaddress.IPv4Network("0.0.0.0/8")


def this_machine(address: IPAddress) -> bool:
    """Whether a connection to `address` lands on this machine: loopback (127.0.0.0/8,
    ::1), the unspecified address (0.0.0.0 and :: connect to this host), an IPv4 one
    of those inside an IPv6 form, or an address of one of its interfaces (a server
    bound to 0.0.0.0 answers on the LAN address too)."""
    if isinstance(address, ipaddress.IPv6Address):
        if address.is_loopback or address.is_unspecified:
            return True
        if any(this_machine(v4) for v4, _form in embedded_ipv4(address)):
            return True
    elif address in _LOOPBACK_V4 or address in _THIS_NETWORK:
        return True
    return _assigned_here(address)


def _assigned_here(address: IPAddress) -> bool:
    """Whether `address` is one of this machine's own: only those can be bound."""
    family = socket.AF_INET6 if address.version == 6 else socket.AF_INET
    try:
        sock = socket.socket(family, socket.SOCK_STREAM)
    except OSError:  # no IPv6 on this host: no IPv6 address of its own either
        return False
    with contextlib.closing(sock):
        try:
            sock.bind((str(address), 0))
        except OSError:
            return False
    return True

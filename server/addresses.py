"""Which host names and addresses mean "this machine only".

Shared by the bind policy (``manage.py serve``), the Host/Origin rule and the home page,
and free of Django.
"""

import ipaddress


def is_loopback(host: str) -> bool:
    """Whether ``host`` names only this machine: 127.0.0.0/8, ::1 or ``localhost``.

    Other host names are not loopback even if they resolve to it today: the check is on
    what the operator wrote, not on the resolver's current answer. The wildcards
    (``0.0.0.0``, ``::``, ``*``, empty) are not loopback.
    """
    host = host.strip()
    if host.lower() == "localhost":
        return True
    try:
        address = ipaddress.ip_address(host.removeprefix("[").removesuffix("]"))
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        # ::ffff:127.0.0.1 (Python < 3.13 does not see it as loopback by itself).
        address = address.ipv4_mapped
    return address.is_loopback

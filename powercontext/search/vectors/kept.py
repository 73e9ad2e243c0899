"""What a process keeps of the vectors it read, scope by scope: each kept under the token
it was read under (``changes``) and given back only while the stored token is the same,
the least recently used dropped once they pass a budget of bytes."""

import threading
from collections import OrderedDict
from collections.abc import Hashable
from typing import Generic, TypeVar

Kept = TypeVar("Kept")


class KeptScopes(Generic[Kept]):
    """{key: (token, what was read, its size)}, at most ``budget`` bytes in all; one
    lock, held only to look up and to store (the read itself runs outside it, so two
    threads may both read a scope the first time; the later one is kept)."""

    def __init__(self, budget: int) -> None:
        self.budget = budget
        self._kept: OrderedDict[Hashable, tuple[str, Kept, int]] = OrderedDict()
        self._size = 0
        self._lock = threading.Lock()

    def get(self, key: Hashable, token: str) -> Kept | None:
        """What was kept for ``key`` under ``token``; None when nothing is, or it was
        read under another token (it is dropped then: it will never be asked for)."""
        with self._lock:
            found = self._kept.get(key)
            if found is None:
                return None
            if found[0] != token:
                self._drop(key)
                return None
            self._kept.move_to_end(key)
            return found[1]

    def put(self, key: Hashable, token: str, value: Kept, size: int) -> None:
        """Keep ``value`` (``size`` bytes) for ``key``, read under ``token``; something
        larger than the whole budget is not kept."""
        with self._lock:
            if key in self._kept:
                self._drop(key)
            if size > self.budget:
                return
            self._kept[key] = (token, value, size)
            self._size += size
            while self._size > self.budget:
                self._drop(next(iter(self._kept)))

    @property
    def size(self) -> int:
        return self._size

    def _drop(self, key: Hashable) -> None:
        self._size -= self._kept.pop(key)[2]

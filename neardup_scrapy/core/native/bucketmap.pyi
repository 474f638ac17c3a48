import numpy as np
import numpy.typing as npt

class EntryBuffer:
    capacity: int
    size: int
    def __init__(self, capacity: int) -> None: ...
    def __len__(self) -> int: ...
    def add(self, keys: npt.NDArray[np.uint64], doc_id: int) -> None: ...
    def drain(self) -> tuple[npt.NDArray[np.uint64], npt.NDArray[np.int32]]: ...

class Run:
    n: int
    directory: bool
    def __init__(
        self,
        ids: npt.NDArray[np.int32],
        keys: npt.NDArray[np.uint64] | None = None,
        directory: npt.NDArray[np.uint64] | None = None,
        tags: npt.NDArray[np.uint32] | None = None,
        shift: int = 0,
    ) -> None: ...
    def __len__(self) -> int: ...

def lookup(
    runs: list[Run], buffer: EntryBuffer, keys: npt.NDArray[np.uint64], cap: int
) -> npt.NDArray[np.int32]: ...

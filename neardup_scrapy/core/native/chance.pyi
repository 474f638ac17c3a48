import numpy as np
import numpy.typing as npt

def far_rows(
    simhash: int,
    stored: npt.NDArray[np.uint8],
    simhashes: npt.NDArray[np.uint64],
    signatures: npt.NDArray[np.uint8],
    bands: int,
    rows: int,
    max_distance: int,
) -> list[int]: ...
def drop_far_rows_in_columns(
    ids: npt.NDArray[np.int64],
    n_rows: int,
    chunk_bits: int,
    simhash_addresses: npt.NDArray[np.uint64],
    signature_addresses: npt.NDArray[np.uint64],
    signature_width: int,
    simhash: int,
    stored: npt.NDArray[np.uint8],
    bands: int,
    rows: int,
    max_distance: int,
    url_end_addresses: npt.NDArray[np.uint64] | None,
    url_blob: bytes | bytearray,
    url_prefix: bytes,
) -> tuple[npt.NDArray[np.int64], list[int]]: ...

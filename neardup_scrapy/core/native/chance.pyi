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
def drop_far_rows_in_chunks(
    ids: npt.NDArray[np.int64],
    simhash_chunks: list[npt.NDArray[np.uint64]],
    signature_chunks: list[npt.NDArray[np.uint8]],
    chunk_bits: int,
    simhash: int,
    stored: npt.NDArray[np.uint8],
    bands: int,
    rows: int,
    max_distance: int,
    url_end_chunks: list[npt.NDArray[np.int64]] | None,
    url_blob: bytes | bytearray,
    url_prefix: bytes,
) -> tuple[npt.NDArray[np.int64], list[int]]: ...

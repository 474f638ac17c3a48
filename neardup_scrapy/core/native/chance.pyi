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

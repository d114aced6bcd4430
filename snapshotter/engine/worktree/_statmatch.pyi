def all_match(
    body: bytes, names_at: int, names_end: int, records_at: int, count: int, fd: int, cutoff: int, /
) -> int | None: ...
def check_folders(
    root_fd: int,
    jobs: list[tuple[bytes, int, int, int, int, int, int, int, int, int]],
    bodies: list[bytes],
    cutoff: int,
    control: bytearray,
    out: bytearray,
    /,
) -> None: ...
def done(control: bytearray, /) -> int: ...
def tell(control: bytearray, slot: int, value: int, /) -> None: ...

"""How long the event-stream parser takes for one huge frame, by chunk size.

A server may send one frame of many MiB in small chunks. The parser searches each chunk
once, so the time is linear in the stream's size whatever the chunk size; a parser that
searched its buffer from the start on every chunk took about 14 s of CPU for 9 MiB.

    python bench/sse.py                  # a 9 MiB frame in 1, 4 and 64 KiB chunks
    python bench/sse.py --mib 32
"""

from __future__ import annotations

import argparse
import time

from soev_pipeline.arms.sse import SSEParser


def parse(frame: bytes, chunk: int) -> float:
    parser = SSEParser(max_frame_bytes=len(frame) + 1024)
    started = time.perf_counter()
    events = []
    for start in range(0, len(frame), chunk):
        events += parser.feed(frame[start : start + chunk])
    assert len(events) == 1
    return time.perf_counter() - started


def main() -> None:
    options = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    options.add_argument("--mib", type=int, default=9)
    size = options.parse_args().mib * 1024 * 1024
    frame = b"event: model_output\ndata: " + b"x" * size + b"\n\n"
    print(f"one frame of {size / 2**20:.0f} MiB")
    for chunk in (1024, 4096, 65536):
        print(f"  {chunk // 1024:>3} KiB chunks: {parse(frame, chunk):6.3f} s")


if __name__ == "__main__":
    main()

"""Media geometry: how many feature tokens one image, video or audio clip becomes.

Rule for a patch encoder: (height / patch) × (width / patch) patches per frame, frames folded
by the temporal patch, merged m × m after the encoder, plus a class token where the encoder
keeps one, times the tiles of a tiled encoder. 448 × 448 at 14 px → 32 × 32 = 1,024.

Towers that resize or tile the image first follow their processor's rule (each cited below):
a token budget (Gemma 4), a longest edge with a break token per row (Pixtral, Mistral 3),
a grid of tiles and a thumbnail (InternVL), or a base tile plus an anyres grid with a
newline token per row (LLaVA-NeXT, LLaVA-OneVision). The tokens counted are those the item
occupies in the language model's context (row breaks and newlines included).
"""

from __future__ import annotations

import math
from collections.abc import Callable

from pydantic import BaseModel

from llm_inventory.errors import InputError
from llm_inventory.spec.model import Media


class MediaGeometry(BaseModel):
    """Feature tokens for one item at a given size."""

    width: int | None
    height: int | None
    frames: int
    patch_size: int | None
    spatial_merge_size: int
    temporal_patch_size: int
    patches: int | None  # patches of one tile (of every tile, for a tiled encoder: see tiles)
    feature_tokens: int
    given: bool  # tokens_per_item (or a token budget) was given rather than derived
    tiles: int = 1  # encoder passes per item (tiles, a thumbnail, a base image)


def feature_tokens(
    media: Media,
    *,
    width: int | None = None,
    height: int | None = None,
    frames: int = 1,
    patch_size: int | None = None,
    merge: int | None = None,
    temporal_patch: int | None = None,
) -> MediaGeometry:
    """Feature tokens one item yields; explicit arguments override the encoder's defaults."""
    patch = patch_size or media.patch_size
    merge = merge or media.spatial_merge_size
    temporal = temporal_patch or media.temporal_patch_size

    def geometry(w: int | None, h: int | None, patches: int | None, tokens: int,
                 given: bool = False, tiles: int = 1) -> MediaGeometry:
        return MediaGeometry(width=w, height=h, frames=frames, patch_size=patch,
                             spatial_merge_size=merge, temporal_patch_size=temporal,
                             patches=patches, feature_tokens=tokens, given=given, tiles=tiles)

    sized = width is not None or height is not None
    if not sized and patch_size is None and media.tokens_per_item:
        return geometry(None, None, None, media.tokens_per_item * frames, given=True)
    if media.token_budget and patch:
        # The encoder runs over the budget's patches whatever the image: the processor pads
        # to budget × merge² (Gemma4ImageProcessor, "pad patches and positions").
        padded = media.token_budget * merge * merge
        if not sized:
            # The most one item yields: the budget (a square image yields a little less).
            return geometry(None, None, padded, media.token_budget * frames, given=True)
        h, w = _budget_size(height or width or 0, width or height or 0, patch, merge,
                            media.token_budget)
        tokens = (h // patch) * (w // patch) // (merge * merge)
        return geometry(w, h, padded, tokens * frames)
    width = width or media.image_size
    height = height or media.image_size
    if width is None or height is None or patch is None:
        raise InputError("image_size", "this encoder has no image size and patch size; "
                         "give --image-size and --patch")
    tiled = TILINGS.get(media.tiling)
    if tiled is not None:
        return tiled(media, width, height, patch, merge, frames, geometry)
    if media.longest_edge:
        width, height = _fit_longest_edge(width, height, media.longest_edge, patch * merge)
    if media.round_sides:
        width, height = _smart_resize(media, width, height, patch * merge)
    for name, value in (("image_size", width), ("image_size", height)):
        if value % patch:
            raise InputError(name, f"{value} px is not a multiple of the {patch} px patch")
    across, down = width // patch, height // patch
    if across % merge or down % merge:
        raise InputError("merge", f"a {across} × {down} patch grid does not merge {merge} × "
                         f"{merge}")
    steps = -(-frames // temporal)
    patches = across * down * steps
    tokens = patches // (merge * merge) + (1 if media.class_token else 0)
    if media.row_break:
        tokens = (down // merge) * (across // merge + 1) * steps
    return geometry(width, height, patches, tokens * media.max_tiles, tiles=media.max_tiles)


def _smart_resize(media: Media, width: int, height: int, block: int) -> tuple[int, int]:
    """(width, height) after smart_resize: each side to the nearest multiple of `block`
    (Python's round, half to even; at least one block), then, past `max_pixels`, both
    scaled down by √(area ÷ max) and floored to blocks, or under `min_pixels` scaled up by
    √(min ÷ area) and ceiled (transformers models/qwen2_vl/image_processing_qwen2_vl.py
    `smart_resize`; Hy4-VL's and LFM2-VL's are the same rule)."""
    w_bar = max(block, round(width / block) * block)
    h_bar = max(block, round(height / block) * block)
    if media.max_pixels is not None and h_bar * w_bar > media.max_pixels:
        beta = math.sqrt(height * width / media.max_pixels)
        h_bar = max(block, math.floor(height / beta / block) * block)
        w_bar = max(block, math.floor(width / beta / block) * block)
    elif media.min_pixels is not None and h_bar * w_bar < media.min_pixels:
        beta = math.sqrt(media.min_pixels / (height * width))
        h_bar = math.ceil(height * beta / block) * block
        w_bar = math.ceil(width * beta / block) * block
    return w_bar, h_bar


def _budget_size(height: int, width: int, patch: int, pool: int, budget: int) -> tuple[int, int]:
    """(height, width) Gemma 4 resizes an image to: the largest sides that are multiples of
    pool × patch with at most budget × pool² patches, aspect ratio kept; a side that rounds
    to nothing becomes one block and the other follows the ratio, capped
    (`get_aspect_ratio_preserving_size`, transformers models/gemma4/image_processing_gemma4.py)."""
    max_patches = budget * pool * pool
    factor = math.sqrt(max_patches * patch * patch / (height * width))
    side = pool * patch
    target_h = int(math.floor(factor * height / side)) * side
    target_w = int(math.floor(factor * width / side)) * side
    longest = (max_patches // (pool * pool)) * side
    if target_h == 0 and target_w == 0:
        raise InputError("image_size", f"{width} × {height} px resizes to nothing")
    if target_h == 0:
        target_h, target_w = side, min(int(math.floor(width / height)) * side, longest)
    elif target_w == 0:
        target_w, target_h = side, min(int(math.floor(height / width)) * side, longest)
    return target_h, target_w


def _fit_longest_edge(width: int, height: int, longest: int, block: int) -> tuple[int, int]:
    """Pixtral's resize: an image past `longest` on a side is scaled down (floored) to fit,
    then each side is padded up to whole merged patches of `block` px
    (`get_resize_output_image_size`, transformers models/pixtral/image_processing_pixtral.py;
    the processor's patch is patch × spatial_merge_size)."""
    ratio = max(height / longest, width / longest)
    if ratio > 1:
        height, width = int(math.floor(height / ratio)), int(math.floor(width / ratio))
    return -(-width // block) * block, -(-height // block) * block


def _grid_shape(width: int, height: int, tile: int, low: int, high: int) -> tuple[int, int]:
    """(columns, rows) of InternVL's tiling: among grids of low … high tiles (by count), the
    aspect ratio closest to the image's; on a tie the later grid wins while the image covers
    more than half its area (`get_optimal_tiled_canvas`, transformers
    models/got_ocr2/image_processing_got_ocr2.py)."""
    grids = sorted(((c, r) for c in range(1, high + 1) for r in range(1, high + 1)
                    if low <= c * r <= high), key=lambda g: g[0] * g[1])
    aspect, area = width / height, width * height
    best, best_diff = (1, 1), float("inf")
    for grid in grids:
        diff = abs(aspect - grid[0] / grid[1])
        if diff < best_diff:
            best, best_diff = grid, diff
        elif diff == best_diff and area > 0.5 * tile * tile * grid[0] * grid[1]:
            best = grid
    return best


def _grid(media: Media, width: int, height: int, patch: int, merge: int, frames: int,
          geometry: Callable[..., MediaGeometry]) -> MediaGeometry:
    """InternVL: the image is cut into the chosen grid of `image_size` tiles, plus one
    thumbnail tile when the grid has more than one (`GotOcr2ImageProcessor`
    .get_number_of_image_patches); each tile is (tile / patch)² / merge² tokens."""
    tile = media.image_size or width
    if tile % patch or (tile // patch) % merge:
        raise InputError("image_size", f"a {tile} px tile does not cut into {patch} px "
                         f"patches merged {merge} × {merge}")
    columns, rows = _grid_shape(width, height, tile, media.min_tiles, media.max_tiles)
    tiles = columns * rows + (1 if media.thumbnail and columns * rows > 1 else 0)
    per_tile = (tile // patch) ** 2
    return geometry(width, height, per_tile * tiles, per_tile // (merge * merge) * tiles * frames,
                    tiles=tiles)


def _best_resolution(height: int, width: int,
                     pinpoints: list[tuple[int, int]]) -> tuple[int, int]:
    """The grid resolution that keeps most of the image and wastes least
    (`select_best_resolution`, transformers image_processing_utils.py)."""
    best, most, least = pinpoints[0], 0, float("inf")
    for h, w in pinpoints:
        scale = min(w / width, h / height)
        effective = min(int(width * scale) * int(height * scale), width * height)
        wasted = w * h - effective
        if effective > most or (effective == most and wasted < least):
            best, most, least = (h, w), effective, wasted
    return best


def _anyres(media: Media, width: int, height: int, patch: int, _merge: int, frames: int,
            geometry: Callable[..., MediaGeometry]) -> MediaGeometry:
    """LLaVA-NeXT / OneVision: a base tile (side² patches, plus the class token the feature
    strategy keeps) and the best pinpoint grid's features, with the padding of the image's
    aspect removed and a newline token per remaining row; OneVision's anyres_max_N pools the
    grid down when it exceeds N tiles' worth by more than 10 %
    (`LlavaNextProcessor._get_number_of_features` / `_get_unpadded_features`,
    `LlavaOnevisionProcessor._get_unpadded_features`)."""
    tile = media.image_size or width
    side = tile // patch
    if not media.grid_pinpoints:
        raise InputError("grid_pinpoints", "anyres tiling needs the grid resolutions")
    best_h, best_w = _best_resolution(height, width, media.grid_pinpoints)
    grid_h, grid_w = side * (best_h // tile), side * (best_w // tile)
    if width / height > grid_w / grid_h:
        padding = (grid_h - int(round(height * (grid_w / width), 7))) // 2
        grid_h -= 2 * padding
    else:
        padding = (grid_w - int(round(width * (grid_h / height), 7))) // 2
        grid_w -= 2 * padding
    unpadded, newlines = grid_h * grid_w, grid_h if media.newline_token else 0
    if media.anyres_max_tiles:
        ratio = math.sqrt(grid_h * grid_w / (media.anyres_max_tiles * side * side))
        if ratio > 1.1:
            unpadded = int(grid_h // ratio) * int(grid_w // ratio)
            newlines = int(grid_h // ratio) if media.newline_token else 0
    base = side * side + (1 if media.class_token else 0)
    tiles = 1 + (best_h // tile) * (best_w // tile)
    return geometry(width, height, side * side * tiles,
                    (base + unpadded + newlines) * frames, tiles=tiles)


def _split(media: Media, width: int, height: int, patch: int, merge: int, frames: int,
           geometry: Callable[..., MediaGeometry]) -> MediaGeometry:
    """LFM2-VL (`Lfm2VlImageProcessor._get_split_layout`, `Lfm2VlProcessor
    ._get_num_multimodal_tokens` and `_build_image_tokens`, transformers models/lfm2_vl):
    an image whose rounded area passes max_pixels × split_tolerance is cut into the grid of
    `image_size` tiles InternVL's rule picks, each ⌈(tile / patch) / merge⌉² tokens, plus a
    thumbnail: the image smart-resized, ⌈(h / patch) / merge⌉ × ⌈(w / patch) / merge⌉
    tokens; a smaller image is that thumbnail alone. With tile markers, a start and an end
    token wrap the image, and a marker precedes each tile and the thumbnail."""
    block = patch * merge
    if media.max_pixels is None:
        raise InputError("max_pixels", "split tiling needs the processor's pixel limit")
    rounded = (max(patch, round(height / block) * block)
               * max(patch, round(width / block) * block))
    large = rounded > media.max_pixels * (media.split_tolerance or 1.0)
    new_w, new_h = _smart_resize(media, width, height, block)
    whole = math.ceil(new_h // patch / merge) * math.ceil(new_w // patch / merge)
    columns = rows = 1
    if large and not media.min_tiles == media.max_tiles == 1:
        tile = media.image_size or width
        columns, rows = _grid_shape(width, height, tile, media.min_tiles, media.max_tiles)
    markers = 2 if media.tile_markers else 0
    if columns * rows > 1:
        tile = media.image_size or width
        per_tile = math.ceil(tile // patch / merge) ** 2
        thumb = 1 if media.thumbnail else 0
        tiles = columns * rows + thumb
        tokens = columns * rows * per_tile + thumb * whole
        if media.tile_markers:
            markers += tiles
        return geometry(width, height, columns * rows * (tile // patch) ** 2
                        + thumb * (new_h // patch) * (new_w // patch),
                        (tokens + markers) * frames, tiles=tiles)
    return geometry(new_w, new_h, (new_h // patch) * (new_w // patch),
                    (whole + markers) * frames)


# How a tiled encoder cuts an image (`Media.tiling`): one rule per tiling.
TILINGS: dict[str, Callable[[Media, int, int, int, int, int, Callable[..., MediaGeometry]],
                            MediaGeometry]] = {
    "grid": _grid,
    "anyres": _anyres,
    "split": _split,
}

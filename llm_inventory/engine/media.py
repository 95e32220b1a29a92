"""Media geometry: how many feature tokens one image, video or audio clip becomes.

Rule for a patch encoder: (height / patch) × (width / patch) patches per frame, frames folded
by the temporal patch, merged m × m after the encoder, plus a class token where the encoder
keeps one, times the tiles of a tiled encoder. 448 × 448 at 14 px → 32 × 32 = 1,024.
"""

from __future__ import annotations

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
    patches: int | None
    feature_tokens: int
    given: bool  # tokens_per_item was given rather than derived


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
    if width is None and height is None and patch_size is None and media.tokens_per_item:
        return MediaGeometry(
            width=None, height=None, frames=frames, patch_size=patch, spatial_merge_size=merge,
            temporal_patch_size=temporal, patches=None,
            feature_tokens=media.tokens_per_item * frames, given=True,
        )
    width = width or media.image_size
    height = height or media.image_size
    if width is None or height is None or patch is None:
        raise InputError("image_size", "this encoder has no image size and patch size; "
                         "give --image-size and --patch")
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
    return MediaGeometry(
        width=width, height=height, frames=frames, patch_size=patch, spatial_merge_size=merge,
        temporal_patch_size=temporal, patches=patches,
        feature_tokens=tokens * media.max_tiles, given=False,
    )

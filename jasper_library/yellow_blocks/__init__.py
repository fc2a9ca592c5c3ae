"""Yellow blocks: one module per block tag (``xps:<tag>`` -> ``yellow_blocks/<tag>.py``)."""

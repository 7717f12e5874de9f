"""The results store, one package: the interface and all its SQL (sql.py), how iterations are encoded
(encoding.py), and the two backends it speaks through (sqlite.py: a file; postgres.py: a server many
machines share). The rest of bridgebench imports only what this module names."""

from bridgebench.store.encoding import SECONDS
from bridgebench.store.sql import (
    SCHEMA_VERSION,
    AlreadyStored,
    Campaign,
    CampaignBusy,
    Store,
    StoredExecution,
    StoreError,
    StoreMissing,
    StoreWriteError,
)

__all__ = ["SCHEMA_VERSION", "SECONDS", "AlreadyStored", "Campaign", "CampaignBusy", "Store", "StoreError",
           "StoreMissing", "StoreWriteError", "StoredExecution"]

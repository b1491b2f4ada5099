package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/data/hub"
)

// hubConfig reads the Hugging Face environment (HF_ENDPOINT, HF_TOKEN, HF_HUB_CACHE, ...).
func hubConfig() hub.Config { return hub.ConfigFromEnv(os.Getenv) }

// datasetError makes a dataset spec naming a folder that does not exist a usage error; the
// exit code table classifies the rest (a repository, revision or task the Hub lacks is a
// usage error too; the network, an offline cache that lacks files, or a gated repository are
// infrastructure failures).
func datasetError(err error) error {
	if errors.Is(err, fs.ErrNotExist) {
		return usageError(err)
	}
	return pullHint(err)
}

// pullHint says which command gets a dataset the offline cache has never held, and how to go
// on without a Hub that cannot be reached.
func pullHint(err error) error {
	switch {
	case errors.Is(err, data.ErrNeverPulled):
		return fmt.Errorf("%w; run aa-grade data pull with the network", err)
	case errors.Is(err, hub.ErrUnreachable):
		return fmt.Errorf("%w; %s", err, offlineHint)
	}
	return err
}

// offlineHint is how to work without the Hub.
const offlineHint = "without the network, HF_HUB_OFFLINE=1 uses the datasets already in the cache, and --dataset " +
	"demo needs none"

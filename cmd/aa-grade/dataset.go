package main

import (
	"errors"
	"io/fs"
	"os"

	"github.com/aa-grade/aa-grade/data"
	"github.com/aa-grade/aa-grade/data/hub"
)

// hubConfig reads the Hugging Face environment (HF_ENDPOINT, HF_TOKEN, HF_HUB_CACHE, ...).
func hubConfig() hub.Config { return hub.ConfigFromEnv(os.Getenv) }

// datasetError classifies a failure to open a dataset: a spec that names nothing usable (a
// missing folder, a repository or revision the Hub does not have) is a usage error; the
// network, an offline cache that lacks files, or a gated repository are infrastructure
// failures.
func datasetError(err error) error {
	switch {
	case errors.Is(err, fs.ErrNotExist), errors.Is(err, data.ErrNotDataset),
		errors.Is(err, hub.ErrRepoNotFound), errors.Is(err, hub.ErrRevisionNotFound):
		return usageErrorf("%v", err)
	}
	return err
}

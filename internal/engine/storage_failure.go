package engine

import "fmt"

// StorageFailure is `storage_failure` (docs/contract.md §22): what the
// `eval` processor does at start when the store named by `storage` cannot
// be opened or read (a corrupt file).
type StorageFailure string

const (
	// StorageFailureContinue runs without durable holding: the cause is
	// logged at error level and otelcol_processor_eval_storage_unavailable
	// is 1, so one corrupt file does not keep the collector down (on
	// Kubernetes: a crash loop until someone deletes it).
	StorageFailureContinue StorageFailure = "continue"
	// StorageFailureFail refuses to start, with an error naming the
	// remedies: for a deployment that must never run without durable
	// holding.
	StorageFailureFail StorageFailure = "fail"
)

// Validate accepts continue and fail.
func (f StorageFailure) Validate() error {
	switch f {
	case StorageFailureContinue, StorageFailureFail:
		return nil
	}
	return fmt.Errorf("storage_failure: %q must be continue or fail", string(f))
}

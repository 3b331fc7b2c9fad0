package telemetrydoc

import (
	"io/fs"
	"path/filepath"
)

// WalkModule calls f with every file below root, the module's directory,
// leaving out .git, testdata and node_modules: the files the checks of the
// module's telemetry read (metadata.yaml, Go sources).
func WalkModule(root string, f func(path string, d fs.DirEntry) error) error {
	return filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n == ".git" || n == "testdata" || n == "node_modules" {
				return filepath.SkipDir
			}
			return nil
		}
		return f(path, d)
	})
}

//go:build !unix

package loopbackport

import "os"

// TryLock: without flock, only the in-process set keeps ports apart.
func TryLock(*os.File) bool { return true }

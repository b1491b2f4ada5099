//go:build linux

package sandbox

// Backends lists every backend, strongest first.
func Backends() []Backend { return []Backend{&Bwrap{}, Landlock{}, None{}} }

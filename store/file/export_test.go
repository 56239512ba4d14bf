package file

// SetPruneHook has s's prunes run hook at their atomic write's stages
// (atomicfile.Hook: "synced", before the rename); an error from it aborts
// the prune with the old file intact.
func SetPruneHook(s *Store, hook func(stage, tmp string) error) { s.pruneHook = hook }

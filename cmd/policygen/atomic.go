package main

import "time"

// staleTemp is how old a temp file left by a killed run must be before a
// later run removes it (younger ones may belong to a run still in
// progress). Files are written with internal/atomicfile.
const staleTemp = time.Hour

package results

import "errors"

// ReadChecked is the one reader of `benchrun check`, `report` and
// `compare`, so the three give one verdict on a file: ReadFile, then the
// corobench rules (File.Check).
//
// A torn last line (a write cut short) is not an error: the File of every
// whole line before it comes back with the *TornError, which the caller
// shows as a warning naming file:line and then goes on with the intact
// cells. Every other problem (not a results file, a malformed line, a
// result without /impl=<row>) is an error and the File is nil.
func ReadChecked(path string) (*File, *TornError, error) {
	f, err := ReadFile(path)
	var torn *TornError
	if errors.As(err, &torn) && f != nil {
		err = nil
	}
	if err != nil {
		return nil, nil, err
	}
	if err := f.Check(); err != nil {
		return nil, nil, err
	}
	return f, torn, nil
}

package sqlitedoc

import "database/sql"

// ReadFile sets whether ReadEvidence reads the other rows from the database
// file (see readFile) and returns the setting it replaced.
func ReadFile(on bool) bool {
	old := readFile
	readFile = on
	return old
}

// DB returns the store's database handle.
func DB(s *Store) *sql.DB { return s.db }

// Exec runs a statement on the store's database.
func Exec(s *Store, q string) error {
	_, err := s.db.Exec(q)
	return err
}

package saga

import "context"

// SignedUnpublished returns the ids of erasures whose certificate step is
// done but whose certificate is not published: resumed, they sign again
// with the current key and must get the envelope whose digest they
// journaled, so the signing key must not change under them (`amnesia keys
// rotate` refuses until they are finished).
func SignedUnpublished(ctx context.Context, d Durable) ([]string, error) {
	ids, err := d.journaled(ctx, "publish")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, id := range ids {
		es, _, err := d.readJournal(ctx, id, mainJournal)
		if err != nil {
			return nil, err
		}
		if !doneIn(es, "publish") && doneIn(es, "certificate") {
			out = append(out, id)
		}
	}
	return out, nil
}

-- The plugin protocols the provider registry listed for a provider package ("6.0", "5.0"),
-- recorded at fetch from the registry's download answer so that `mirror serve` and
-- `mirror export` answer with the list upstream gave (docs/protocols.md §1.2, §1.3).
-- A JSON array of strings on provider_package rows: '[]' when upstream listed none, '' when
-- not known (rows from before this version, from a network mirror, which lists none, or from
-- a bundle that did not carry them); always '' on rows of other kinds.
ALTER TABLE artifacts ADD COLUMN protocols TEXT NOT NULL DEFAULT '';

// Placeholder so the mirror library has a translation unit until its first real source lands; delete it then.

"""Counter backends behind one interface (base.Backend); ``auto`` picks what the machine has."""

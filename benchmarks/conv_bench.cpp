// Placeholder (issue 15): the owner of this file replaces it.
int main() { return 0; }

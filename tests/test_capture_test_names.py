"""Issue 14, the commit signal: which tests a commit adds (``capture.test_names``), read from unified diffs."""

from __future__ import annotations

import pytest

from memcue.sidecar.capture.test_names import MAX_TESTS, added_tests, is_test_file

DIFF = """diff --git a/tests/test_orders.py b/tests/test_orders.py
--- a/tests/test_orders.py
+++ b/tests/test_orders.py
@@ -4,0 +5,3 @@ class OrdersTest(unittest.TestCase):
+    def test_late_order_skips_a_day(self):
+        self.assertEqual(bake_date(late), friday)
-    def test_removed_one(self):
@@ -20,0 +24,2 @@
+    async def test_async_import(self):
+        pass
diff --git a/pkg/parse_test.go b/pkg/parse_test.go
+func TestParseComma(t *testing.T) {
+func helperNotATest() {
diff --git a/web/cart.spec.ts b/web/cart.spec.ts
+  it('keeps the cart after a reload', () => {
+  test.only("rounds totals half up", async () => {
diff --git a/src/lib.rs b/src/lib.rs
+    #[test]
+    fn zero_quantity_lines_are_skipped() {
+    fn not_annotated() {
+    @Test
+    @DisplayName("dates")
+    public void parsesIsoDates() {
+    [Fact]
+    public async Task Handles_empty_input() {
+  it "keeps the last row of an edited order" do
"""


def test_added_tests_are_named_in_the_shapes_of_the_common_frameworks() -> None:
    assert added_tests(DIFF) == ["test_late_order_skips_a_day", "test_async_import", "TestParseComma",
                                 "keeps the cart after a reload", "rounds totals half up",
                                 "zero_quantity_lines_are_skipped", "parsesIsoDates", "Handles_empty_input",
                                 "keeps the last row of an edited order"]


def test_removed_context_and_header_lines_name_nothing_and_names_are_capped() -> None:
    assert added_tests("--- a/tests/test_x.py\n+++ b/tests/test_x.py\n-    def test_gone(self):\n"
                       "     def test_context(self):\n+    x = test_value()\n") == []
    many = "".join(f"+def test_{i}():\n" for i in range(MAX_TESTS + 5))
    assert added_tests(many) == [f"test_{i}" for i in range(MAX_TESTS)]


@pytest.mark.parametrize(("path", "expected"), [
    ("tests/test_crumb.py", True), ("pkg/parse_test.go", True), ("web/src/cart.spec.ts", True),
    ("src/test/java/org/x/FooTest.java", True), ("app/__tests__/cart.js", True), ("spec/models/order_spec.rb", True),
    ("crumb/orders.py", False), ("src/contest.py", False), ("docs/testing-guide.md", False),
    ("lib/latest.py", False),
])
def test_test_files_are_told_by_their_folder_or_name(path: str, expected: bool) -> None:
    assert is_test_file(path) is expected

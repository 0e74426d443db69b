// Writes examples/corpus: a small corpus of every supported type about one fictional company,
// with people and organisations that recur across documents. The text is fixed; the DOCX and
// XLSX bytes are not reproducible (their libraries stamp the current time into the zip), so
// the committed files are the reference and re-running the script changes those two files.
// Run: npx node scripts/make-example-corpus.ts
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { makeDocx, makePdf, makeXlsx } from '../test/helpers/documents.ts';

const OUT = path.resolve(import.meta.dirname, '..', 'examples', 'corpus');

const files: Record<string, string | Buffer> = {
  'company/about.md': `# About Northwind Traders

Northwind Traders imports speciality foods from small producers. It was founded in Lyon by
Ada Lovelace and Grace Hopper, and works with Contoso Logistics for every shipment in Europe.

## Leadership

Ada Lovelace leads product. Grace Hopper leads operations and the partnership with Contoso Logistics.
`,
  'company/faq.md': `# Customer FAQ

## Ordering

Q: How long does delivery take?
A: Three to five working days inside the EU, shipped by Contoso Logistics.

Q: Can I change an order after it is placed?
A: Yes, within two hours, by writing to orders@northwind.example.

Q: Do you ship outside the EU?
A:

## Returns

Q: What is the return window?
A: Thirty days from delivery for unopened goods.
`,
  'policies/travel.md': `# Travel Policy

Staff of Northwind Traders book travel through the operations team led by Grace Hopper.
Economy class is the default for trips under six hours. Visits to Contoso Logistics in Rotterdam
are planned a month ahead.
`,
  'policies/notes.txt':
    'Meeting notes, 3 March: Ada Lovelace and the Contoso Logistics account team agreed on weekly pickups.\n',
  'news/launch.html': `<!doctype html><html><head><meta charset="utf-8"><title>Northwind opens a Rotterdam hub</title></head>
<body><nav><a href="/">Home</a> | <a href="/news">News</a></nav>
<article><h1>Northwind opens a Rotterdam hub</h1>
<p>Northwind Traders and Contoso Logistics opened a shared warehouse in Rotterdam this spring.</p>
<p>Grace Hopper said the hub cuts delivery times to Benelux customers by a day.</p></article>
<footer>© Northwind Traders</footer></body></html>
`,
};

files['reports/annual-report.pdf'] = await makePdf(
  [
    {
      heading: 'Annual Report',
      paragraphs: [
        'Northwind Traders grew revenue by twelve percent.',
        'Ada Lovelace presented the new product range.',
      ],
    },
    { heading: 'Partners', paragraphs: ['Contoso Logistics handled all European shipments.'] },
  ],
  'Northwind Traders Annual Report',
);
files['people/onboarding.docx'] = await makeDocx();
files['sales/price-list.xlsx'] = await makeXlsx();

for (const [rel, content] of Object.entries(files)) {
  const file = path.join(OUT, rel);
  await mkdir(path.dirname(file), { recursive: true });
  await writeFile(file, content);
}
console.log(`wrote ${Object.keys(files).length} files to ${OUT}`);

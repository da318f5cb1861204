# Random search for sweeps: the method, the trials asked, the seed and the parameters' specs as typed.

from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ('jobs', '0015_job_scalars'),
    ]

    operations = [
        migrations.AddField(
            model_name='sweep',
            name='method',
            field=models.CharField(choices=[('grid', 'Grid'), ('random', 'Random search')], default='grid',
                                   max_length=16),
        ),
        migrations.AddField(
            model_name='sweep',
            name='specs',
            field=models.JSONField(default=list),
        ),
        migrations.AddField(
            model_name='sweep',
            name='trials_asked',
            field=models.PositiveIntegerField(blank=True, null=True),
        ),
        migrations.AddField(
            model_name='sweep',
            name='seed',
            field=models.BigIntegerField(blank=True, null=True),
        ),
    ]
